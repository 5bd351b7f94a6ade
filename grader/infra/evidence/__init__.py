"""The evidence of GPU runs, one schema for every writer and reader.

gpucheck, bench and calibrate write through `dump`; the slides and `gpucheck
--merge` read through `load`. A file of an earlier version (or without
`schema_version`: a layout from before the schema) is read through the one
adapter, `legacy.upgrade`; a version newer than this grader's is refused, never
guessed at.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, TypeVar

from ..atomic import write_atomic
from .codec import EvidenceError, decode, encode
from .legacy import upgrade
from .records import (
    ANCHOR_SHARE,
    ANCHOR_SIZES,
    KINDS,
    SCHEMA_VERSION,
    AnchorCheck,
    AnchorRow,
    BenchFile,
    BenchRun,
    BenchSize,
    Build,
    Calibration,
    CalibrationFile,
    CubCheck,
    CubRow,
    GpuCheck,
    ImplRun,
    LabEvidence,
    Machine,
    MesonSuites,
    MesonTest,
    PeerEvidence,
    ProfileFile,
    ProfileMachine,
    SanitizerRun,
    ScriptRun,
    Study,
)

__all__ = [
    "ANCHOR_SHARE",
    "ANCHOR_SIZES",
    "SCHEMA_VERSION",
    "AnchorCheck",
    "AnchorRow",
    "BenchFile",
    "BenchRun",
    "BenchSize",
    "Build",
    "Calibration",
    "CalibrationFile",
    "CubCheck",
    "CubRow",
    "EvidenceError",
    "GpuCheck",
    "ImplRun",
    "LabEvidence",
    "Machine",
    "MesonSuites",
    "MesonTest",
    "PeerEvidence",
    "ProfileFile",
    "ProfileMachine",
    "SanitizerRun",
    "ScriptRun",
    "Study",
    "as_record",
    "dump",
    "dumps",
    "from_data",
    "load",
    "read_text",
    "to_data",
    "upgrade",
]

R = TypeVar("R")


def from_data(data: Any, expect: type[R], where: str = "evidence") -> R:
    """Parsed JSON as the record `expect` (GpuCheck, BenchFile, ProfileFile,
    CalibrationFile); EvidenceError says where and what does not fit."""
    if not isinstance(data, dict):
        raise EvidenceError(
            f"{where}: an evidence file holds one JSON object, not {type(data).__name__}"
        )
    version = data.get("schema_version", 0)
    if isinstance(version, bool) or not isinstance(version, int):
        raise EvidenceError(f"{where}: schema_version {version!r} is not a whole number")
    if not 0 <= version <= SCHEMA_VERSION:
        raise EvidenceError(
            f"{where}: schema_version {version} is unknown: this grader reads 1 to "
            f"{SCHEMA_VERSION} (and files without the field, from before the schema); "
            "a newer file needs a newer checkout"
        )
    if version < SCHEMA_VERSION:
        data = upgrade(data, where)
    kind = data.get("kind")
    want = getattr(expect, "KIND", None)
    if kind not in KINDS:
        raise EvidenceError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    if kind != want:
        raise EvidenceError(f"{where}: this is {kind} evidence, not {want}")
    return decode(expect, data, where)


def as_record(data: Any, cls: type[R], where: str = "evidence") -> R:
    """Part of a file as its record: a bench program's report as a BenchRun, say."""
    return decode(cls, data, where)


def read_text(path: Path) -> str:
    """A committed run's text; runs kept as `.json.gz` (to keep the tree small:
    docs/decisions.md, "The evidence in the tree stays under 8 MiB") read as
    the JSON they were written as."""
    if path.name.endswith(".gz"):
        return gzip.decompress(path.read_bytes()).decode()
    return path.read_text()


def load(path: Path | str, expect: type[R]) -> R:
    path = Path(path)
    try:
        data = json.loads(read_text(path))
    except (OSError, UnicodeDecodeError, gzip.BadGzipFile, EOFError) as e:
        raise EvidenceError(f"{path}: cannot read it ({e})") from None
    except json.JSONDecodeError as e:
        raise EvidenceError(f"{path}: not JSON ({e})") from None
    return from_data(data, expect, str(path))


def to_data(record: Any) -> dict[str, Any]:
    data = encode(record)
    assert isinstance(data, dict)
    return data


def dumps(record: Any) -> str:
    return json.dumps(to_data(record), indent=2) + "\n"


def dump(record: Any, path: Path | str) -> None:
    """Writes the record as JSON, atomically: a reader never sees half a file."""
    write_atomic(Path(path), dumps(record))
