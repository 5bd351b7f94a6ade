"""Every committed GPU run reads as it did when its snapshot was taken: for each
evidence file under tests/gpu_runs, the record the loader returns and the JSON
the writer makes of it, as digests, against grader/tests/snapshots/evidence_reads.json.
A change to the evidence reader (its library, the adapter, a record) that
alters what any committed run says fails here, naming the file.

After a deliberate change to what the runs read as, rewrite the snapshot with
`python3 -m grader.tests.test_evidence_snapshot` and say why in the commit."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path


from grader.infra import evidence as E

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "tests" / "gpu_runs"
SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "evidence_reads.json"
RECORDS = (E.GpuCheck, E.BenchFile, E.ProfileFile, E.CalibrationFile)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def read_as(path: Path) -> dict[str, str] | None:
    """What the loader makes of one committed file: the record it reads as, a
    digest of the record (types included: repr tells 1 from 1.0 and an enum from
    its word) and one of the JSON the writer makes of it; None for a file that
    is no evidence (a script's own output, a JSON Lines log)."""
    for cls in RECORDS:
        try:
            record = E.load(path, cls)
        except E.EvidenceError:
            continue
        return {
            "record": cls.__name__,
            "repr": _digest(repr(record)),
            "json": _digest(E.dumps(record)),
        }
    return None


def committed_reads() -> dict[str, dict[str, str]]:
    files = sorted(p for p in RUNS.rglob("*") if p.name.endswith((".json", ".json.gz")))
    reads = {str(p.relative_to(ROOT)): read_as(p) for p in files}
    return {name: r for name, r in reads.items() if r is not None}


def test_every_committed_run_reads_as_its_snapshot():
    want = json.loads(SNAPSHOT.read_text())
    got = committed_reads()
    assert sorted(got) == sorted(want), "the evidence files that load differ from the snapshot"
    changed = [name for name in want if got[name] != want[name]]
    assert not changed, f"these runs read differently from the snapshot: {changed}"


def test_the_snapshot_covers_every_kind_and_an_old_layout():
    # The comparison must have something to compare: each kind of file the
    # grader reads, and a run from before the schema (read through the adapter).
    want = json.loads(SNAPSHOT.read_text())
    assert {r["record"] for r in want.values()} >= {"GpuCheck", "ProfileFile"}
    assert "tests/gpu_runs/h100/gpucheck.json.gz" in want


def test_a_changed_reading_is_caught(monkeypatch):
    # A reader that read one figure differently must fail the comparison.
    path = RUNS / "h200" / "gpucheck.json"
    before = read_as(path)
    real = E.from_data

    def off_by_one(data, expect, where="evidence"):
        data = json.loads(json.dumps(data))
        data["seconds"] += 1
        return real(data, expect, where)

    monkeypatch.setattr(E, "from_data", off_by_one)
    after = read_as(path)
    assert before is not None and after is not None
    assert after["repr"] != before["repr"] and after["json"] != before["json"]


if __name__ == "__main__":
    SNAPSHOT.write_text(json.dumps(committed_reads(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT}", file=sys.stderr)
