"""The batch's files: written atomically (temporary file, flush, rename),
read back only after validation. A result file that does not validate is
treated as absent (the student is graded again), never trusted; nor is one
that this grader's key did not sign (signed): a result.json edited by hand, or
written by anything but a batch, is graded again on resume."""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

from ..results import LabResult, StudentResult

# The file of the key that signs results, where a test or a class graded from
# several accounts names one; else result_key_path()'s default.
KEY_ENV = "GRADER_RESULT_KEY"
# Beside each result.json: its signature (sign).
SIGNATURE = "result.json.hmac"


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


def result_key_path() -> Path:
    """Outside every batch's --out, which a gradebook's reader may copy:
    $XDG_STATE_HOME (~/.local/state)/cuda-reduction-labs/. The sandbox
    (--sandbox) shows the graded code no home folder; without it, that code
    runs as the instructor and could read the key, as it could any file of theirs."""
    if named := os.environ.get(KEY_ENV):
        return Path(named)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "cuda-reduction-labs" / "result-key"


@functools.lru_cache(maxsize=4)
def _key(path: Path) -> bytes:
    """The key in `path`, made (32 random bytes, readable by its owner only)
    where there is none. Made beside it and linked into place, so that two
    batches starting at once read the same key, never a half-written one."""
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    new = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, secrets.token_hex(32).encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(new, path)
    except FileExistsError:
        pass  # another batch made it first: theirs is the key
    finally:
        new.unlink()
    return path.read_bytes().strip()


def result_key() -> bytes:
    return _key(result_key_path())


def canonical(res: StudentResult) -> str:
    """The result as signed: its JSON with sorted keys and no spaces, so that
    only what it says, not how the file is laid out, counts."""
    return json.dumps(res.to_dict(), sort_keys=True, separators=(",", ":"))


def sign(res: StudentResult) -> str:
    """HMAC-SHA256 of canonical(res) under result_key()."""
    return hmac.new(result_key(), canonical(res).encode(), hashlib.sha256).hexdigest()


def signed(folder: Path, res: StudentResult) -> bool:
    """Whether folder's SIGNATURE is this grader's for `res` (its result.json)."""
    try:
        said = (folder / SIGNATURE).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return hmac.compare_digest(said, sign(res))


def load_signed(path: Path) -> StudentResult | None:
    """load_result(path), where this grader signed it (signed); else None."""
    res = load_result(path)
    return res if res is not None and signed(path.parent, res) else None


def unsigned(students_dir: Path, students: list[str]) -> list[str]:
    """The students whose result.json this grader's key did not sign: edited
    by hand, or written by another grader."""
    return [
        name
        for name in students
        if (res := load_result(students_dir / name / "result.json")) is not None
        and not signed(students_dir / name, res)
    ]
