"""The batch's files: written atomically (temporary file, flush, rename),
read back only after validation. A result file that does not validate is
treated as absent (the student is graded again), never trusted."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..results import LabResult, StudentResult


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_result(path: Path, max_bytes: int = 4 << 20) -> StudentResult | None:
    """A student's result.json, or None when it is missing, too large, not JSON,
    not a result, or claims points its labs cannot have."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > max_bytes:
            return None
        d = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(d, dict) or not isinstance(d.get("labs"), list):
            return None
        labs = [LabResult.from_dict(l) for l in d.pop("labs")]
        d.pop("points", None), d.pop("max_points", None)
        res = StudentResult(labs=labs, **d)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    for lab in res.labs:
        if not (
            0 <= lab.points_correctness <= lab.max_correctness
            and 0 <= lab.points_performance <= lab.max_performance
        ):
            return None
    return res
