"""Measured tables a script adds to a rooflens device profile (its other contents unchanged)."""
import json


def merge_tables(measured_path, profile_path, methods):
    """The tables of `measured_path` ({"tables": {...}, ...}) into the profile at `profile_path`,
    with `methods(measured)`'s {key: how it was measured} in the profile's "method"."""
    with open(measured_path) as f:
        measured = json.load(f)
    with open(profile_path) as f:
        profile = json.load(f)
    profile.setdefault("tables", {}).update(measured["tables"])
    profile.setdefault("method", {}).update(methods(measured))
    with open(profile_path, "w") as f:
        json.dump(profile, f, separators=(",", ":"))
        f.write("\n")
