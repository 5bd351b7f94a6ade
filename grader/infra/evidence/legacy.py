"""The one adapter from earlier layouts to the current schema version. The committed
GPU runs (the evidence) are read through it, so they stay byte for byte as the GPU
machine wrote them.

Version 0 (the layouts before the schema, no `schema_version`) differs from 1 in:
- no `schema_version` or `kind`: the kind is told by the keys;
- a lab's `bench` was once one bench ({"name", "sizes": [...]}), CUB's figures then
  in `peers.cub_<contract>`; later a dict of bench name -> bench;
- anchors said `meets_90_percent_at_2^26_and_2^28`, spelling its constants;
- a program that timed out had `exit_code: "timed_out"`;
- a study's report was flat beside its exit code and output;
- a checker run counted its `restarts` (the runner restarted after a crash; gone
  with the trusted checker), always 0 in the committed runs;
- joined sandbox batches were `runs` (a list), the word profile uses for a dict;
- `bench.json` was a bare dict of bench name -> bench.

Version 1 differs from 2 in a bench size's `floor_us`: it was the empty kernel's
launch plus the bytes at theoretical speed, a sum that a launch-bound call beats
(a batch overlaps one call's reading with the next call's launch). Read as version
2, the floor is the larger of the two, both recovered from what version 1 wrote
(`launch_us`, and the bytes as `floor_us - launch_us`). Such a run's launch figure
is its empty kernel's best median, not its fastest batch, and was timed in batches
of its own length: the re-read floor is the corrected rule over the old figures,
and the run has no `floor_below_all` (it did not check).
"""

from __future__ import annotations

import copy
from typing import Any

from .codec import EvidenceError
from .records import ANCHOR_SHARE, ANCHOR_SIZES, SCHEMA_VERSION

OLD_ANCHOR_KEY = "meets_90_percent_at_2^26_and_2^28"


def upgrade(data: dict[str, Any], where: str = "evidence") -> dict[str, Any]:
    """An object of an earlier version as the current one (a new object: `data` is
    left alone)."""
    version = data.get("schema_version", 0)
    new = copy.deepcopy(data)
    if version == 0:
        new = _from_version_0(new, where)
    if version <= 1:
        for run in _bench_runs(new):
            _floor_as_larger(run)
    return {**new, "schema_version": SCHEMA_VERSION}


def _from_version_0(new: dict[str, Any], where: str) -> dict[str, Any]:
    kind = _kind_of(new, where)
    if kind == "gpucheck":
        _gpucheck(new)
    elif kind == "bench":
        new = {"benches": {k: _program(v) for k, v in new.items()}}
    return {"schema_version": 1, "kind": kind, **new}


def _bench_runs(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Every bench program's run in a gpucheck or bench file."""
    if data.get("kind") == "bench":
        return list(data.get("benches", {}).values())
    runs = [b for e in (data.get("labs") or {}).values() for b in e.get("bench", {}).values()]
    return runs + [p["bench"] for p in (data.get("peers") or {}).values() if "bench" in p]


def _floor_as_larger(run: dict[str, Any]) -> None:
    for s in run.get("sizes", []):
        launch, floor = s.get("launch_us"), s.get("floor_us")
        if launch is not None and floor is not None:
            s["bytes_us"] = round(max(floor - launch, 0.0), 6)
            s["floor_us"] = max(launch, s["bytes_us"])


def _kind_of(data: dict[str, Any], where: str) -> str:
    if "profiles" in data and "log2n" in data:
        return "profile"
    if "machine" in data:
        return "gpucheck"
    if data and all(isinstance(v, dict) and "sizes" in v for v in data.values()):
        return "bench"
    raise EvidenceError(
        f"{where}: no schema_version and not a layout from before the schema "
        "(gpucheck.json has `machine`, profile.json `profiles`, bench.json "
        "one object per bench)"
    )


def _gpucheck(ev: dict[str, Any]) -> None:
    peers = ev.get("peers", {})
    for lab_id, entry in ev.get("labs", {}).items():
        raw = entry.get("bench")
        if isinstance(raw, dict) and isinstance(raw.get("sizes"), list):
            entry["bench"] = {"bench-" + raw.get("name", lab_id): _one_bench(raw, lab_id, peers)}
        for name, b in entry.get("bench", {}).items():
            entry["bench"][name] = _program(b)
        if "anchors" in entry:
            _anchors(entry["anchors"])
        for impl in ("solutions", "labs"):
            run = entry.get(impl, {}).get("run", {})
            restarts = run.pop("restarts", 0)
            if restarts:  # kept where a reader can still see it
                run.setdefault("properties", {})["restarts"] = str(restarts)
    for peer in peers.values():
        if "anchors" in peer:
            _anchors(peer["anchors"])
    for name, st in ev.get("studies", {}).items():
        st = _program(st)
        ev["studies"][name] = {
            k: st.pop(k) for k in ("exit_code", "output", "timed_out") if k in st
        } | {"report": st}
    box = ev.get("sandbox")
    if isinstance(box, dict) and isinstance(box.get("runs"), list):
        box["batches"] = box.pop("runs")


def _one_bench(raw: dict[str, Any], lab_id: str, peers: dict[str, Any]) -> dict[str, Any]:
    """The oldest layout: CUB's figures from the peer bench of the same contract."""
    contract = raw.get("contract") or _contract(lab_id)
    peer = {
        s["log2n"]: s.get("gbps")
        for s in peers.get(f"cub_{contract}", {}).get("bench", {}).get("sizes", [])
        if s.get("status", "ok") == "ok"
    }
    for s in raw["sizes"]:
        s.setdefault("n", 1 << s["log2n"])
        s.setdefault("status", "?")
        if peer.get(s["log2n"]) is not None:
            s["cub_gbps"] = peer[s["log2n"]]
    return dict(raw, contract=contract, cub_same_process=False)


def _contract(lab_id: str) -> str:
    from ... import labmeta

    try:
        kind = labmeta.load().lab(lab_id).kind
    except (KeyError, labmeta.CourseFileError):
        kind = ""
    return "max" if "max" in kind else "sum"


def _program(run: dict[str, Any]) -> dict[str, Any]:
    if run.get("exit_code") == "timed_out":
        run["exit_code"] = None
        run["timed_out"] = True
    return run


def _anchors(check: dict[str, Any]) -> None:
    if OLD_ANCHOR_KEY in check:
        check["meets_required_share"] = check.pop(OLD_ANCHOR_KEY)
        check.setdefault("required_share", ANCHOR_SHARE)
        check.setdefault("required_sizes", list(ANCHOR_SIZES))
