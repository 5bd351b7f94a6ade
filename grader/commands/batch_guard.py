"""What a batch checks before it starts: room on the disks, and no other batch
writing to the same output folder."""

from __future__ import annotations

import fcntl
import shutil
import tempfile
from pathlib import Path

from ..infra import toolchain

# A worker's build tree for every lab is about 300 MB (sm_90); student folders,
# reports and the compiler's temporary files need more beside it.
MIN_FREE_OUT = 1 << 30
MIN_FREE_TMP = 512 << 20


def check_space(out: Path) -> None:
    """A nearly full disk fails builds in ways that read as the student's
    ("nvcc cannot compile programs"): refuse to start instead, in one line."""
    for where, need in ((out, MIN_FREE_OUT), (Path(tempfile.gettempdir()), MIN_FREE_TMP)):
        try:
            free = shutil.disk_usage(where).free
        except OSError as e:
            raise toolchain.SetupError(f"cannot use {where}: {e.strerror}") from None
        if free < need:
            raise toolchain.SetupError(
                f"{where} has {free >> 20} MB free; a batch needs at least "
                f"{need >> 20} MB there: free some space, or use another "
                "--out or TMPDIR"
            )


class OutLock:
    """One batch per output folder at a time."""

    def __init__(self, out: Path):
        try:
            out.mkdir(parents=True, exist_ok=True)
            self.file = open(out / ".batch.lock", "a")
        except OSError as e:
            raise toolchain.SetupError(
                f"cannot use {out} for the batch's output: {e.strerror}"
            ) from None
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.file.close()
            raise toolchain.SetupError(
                f"another batch is writing to {out}: wait for it, or give this one another --out"
            ) from None

    def release(self) -> None:
        self.file.close()
