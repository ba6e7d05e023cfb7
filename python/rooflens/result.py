"""Result: one analysis (or comparison) as Python objects, built from the result document the
command line's --json writes (docs/json.md). Nothing here computes a figure: every number is the
document's; the tables are its arrays, as pandas DataFrames when pandas is installed, else lists
of dicts."""

import dataclasses
import html as html_escape
import json
from typing import Optional

from . import _core


def _pandas():
    """pandas, or None where it is not installed (the tables are then lists of dicts)."""
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _flat(row):
    """A row with its nested objects spread into dotted columns ({"measured": {"median_s": 1}} ->
    "measured.median_s"); lists stay as they are."""
    out = {}
    for key, value in row.items():
        if isinstance(value, dict):
            for k, v in _flat(value).items():
                out[f"{key}.{k}"] = v
        else:
            out[key] = value
    return out


def table(rows, first=()):
    """Rows (dicts) as a DataFrame when pandas is installed, else as a list of flat dicts. The
    document's objects keep their keys sorted; `first` names the columns that lead."""
    flat = []
    for r in rows:
        f = _flat(r)
        lead = {k: f[k] for k in first if k in f}
        lead.update((k, v) for k, v in f.items() if k not in lead)
        flat.append(lead)
    pd = _pandas()
    return flat if pd is None else pd.DataFrame.from_records(flat)


@dataclasses.dataclass(frozen=True)
class Totals:
    """The whole model (the document's `totals`): FLOPs and bytes summed over the nodes, the
    parameters, the predicted time of one forward pass (or step), in FLOPs, bytes and seconds."""
    flops: int
    macs: int
    dense_flops: int
    bytes_read_activations: int
    bytes_read_weights: int
    bytes_written: int
    params: int
    buffers: int
    weight_bytes: int
    constants: int
    constant_bytes: int
    predicted_s: float
    batch: int
    batch_source: str
    throughput_per_s: float
    throughput_unit: str
    prediction_sources: Optional[dict] = None

    @classmethod
    def from_json(cls, totals):
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in totals.items() if k in names})


class Result:
    """What analyze() or compare() found. `json` is the whole document (docs/json.md)."""

    def __init__(self, text):
        self._text = text
        self.json = json.loads(text)

    # -- the document's parts -------------------------------------------------------------------
    @property
    def totals(self) -> Totals:
        return Totals.from_json(self.json["totals"])

    @property
    def nodes(self):
        """One row per graph node in execution order (`nodes[]`)."""
        return table(self.json["nodes"], first=("index", "name", "op", "module", "bound", "predicted_s", "flops"))

    @property
    def by_op(self):
        """Time, FLOPs and bytes per op type, slowest first (`by_op[]`)."""
        return table(self.json["by_op"], first=("op", "count", "predicted_s"))

    @property
    def by_block(self):
        """Repeated layers folded into one row each (`by_block[]`)."""
        return table(self.json["by_block"], first=("block", "op", "count", "predicted_s"))

    @property
    def memory_timeline(self):
        """A training step's memory at each moment (`training.timeline[]`); otherwise the bytes live
        while each node runs (`memory.live_bytes_per_node`), one row per node."""
        training = self.json.get("training")
        if training is not None:
            return table(training["timeline"], first=("moment", "total"))
        live = self.json["memory"]["live_bytes_per_node"]
        nodes = self.json["nodes"]
        rows = [{"index": i, "node": nodes[i]["name"] if i < len(nodes) else None, "live_bytes": b}
                for i, b in enumerate(live)]
        return table(rows)

    @property
    def modules(self):
        """compare() only: every module with its prediction and measurement (`compare.modules[]`)."""
        return table(self._compare()["modules"], first=("path", "predicted_s", "measured_s", "efficiency", "gap_s"))

    @property
    def blocks(self):
        """compare() only: modules folded over layer numbers, ranked by gap (`compare.blocks[]`)."""
        return table(self._compare()["blocks"], first=("block", "instances", "predicted_s", "measured_s", "gap_s"))

    def _compare(self):
        if "compare" not in self.json:
            raise AttributeError("this result is an analysis; modules and blocks come from rooflens.compare()")
        return self.json["compare"]

    # -- renderings -----------------------------------------------------------------------------
    def to_json(self, path=None):
        """The document as the command line's --json writes it; written to `path` when given."""
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(self._text)
        return self._text

    def to_html(self, path=None):
        """The self-contained HTML report (summary, roofline, tables), as --html writes it."""
        page = _core.html(self._text)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(page)
        return page

    def table(self, top=15, by="node"):
        """The terminal report, as `rooflens analyze` (or `compare`) prints it."""
        if by not in ("node", "block"):
            raise ValueError(f"by={by!r}: expected 'node' or 'block'")
        return _core.table(self._text, top, by == "block")

    def __str__(self):
        return self.table()

    def __repr__(self):
        t = self.json["totals"]
        return (f"<rooflens.Result {self.json['model']['name']} on {self.json['device']['id']}: "
                f"{len(self.json['nodes'])} nodes, {t['flops']:.4g} FLOPs, {t['params']} params, "
                f"predicted {t['predicted_s'] * 1e3:.4g} ms>")

    def _repr_html_(self):
        # The report is a whole page with its own script and style: an iframe keeps it apart
        # from the notebook's.
        return ('<iframe style="width:100%;height:720px;border:0" srcdoc="'
                + html_escape.escape(self.to_html(), quote=True) + '"></iframe>')
