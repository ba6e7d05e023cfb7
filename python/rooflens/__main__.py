"""The `rooflens` console script: the C++ command line in this process, same messages, same exit
codes (0 ok, 2 bad input, 1 internal error, ...)."""

import os
import sys

from . import _core


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    # The GPU module and the record library sit beside the extension where the wheel was built
    # with CUDA; the C++ looks beside the executable (here: python), so name them.
    for env, name in (("ROOFLENS_GPU_MODULE", "librooflens_gpu.so"),
                      ("ROOFLENS_RECORD_LIBRARY", "librooflens_record.so")):
        path = os.path.join(here, name)
        if not os.environ.get(env) and os.path.exists(path):
            os.environ[env] = path
    sys.stdout.flush()
    sys.stderr.flush()
    return _core.run_cli(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
