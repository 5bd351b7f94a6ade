"""Prints the folder that holds NCCL's include/nccl.h and lib/libnccl.so*, from
the nvidia-nccl-cu13 wheel of this Python (the GPU machines have it in the
system site-packages; CI installs it from PyPI). Exit 1, saying why, without it."""

import importlib.util
import sys
from pathlib import Path


def wheel_root() -> Path | None:
    try:
        spec = importlib.util.find_spec("nvidia.nccl")
    except ModuleNotFoundError:
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for place in spec.submodule_search_locations:
        root = Path(place)
        if (root / "include" / "nccl.h").is_file() and any((root / "lib").glob("libnccl.so*")):
            return root
    return None


def main() -> int:
    root = wheel_root()
    if root is None:
        print("no nvidia-nccl-cu13 wheel in this Python's site-packages", file=sys.stderr)
        return 1
    print(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
