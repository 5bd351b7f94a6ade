"""`gpucheck`: the evidence run, on a machine with a GPU.

Builds everything, runs every lab's tests against the reference solution and
the untouched skeleton (bandwidth tests on), the meson suites that expect
failures (skeletons, mutants) and the CUB peer, benchmarks every reference beside
CUB (same process) over sizes 2^16..2^30, compares with the H200 anchors, runs
the studies the handouts quote (tests/tuning/*-study), and writes
OUT/gpucheck.json (GPU, driver, CUDA, commit, every test, every figure). The
last thing printed is a short table.
"""
from __future__ import annotations

import datetime
import json
import subprocess
import time
from pathlib import Path

from . import grade, labmeta, tools
from .gtest_run import run_gtest
from .scoring import LabResult, score
from .selftest import summarize

BENCH_SIZES = [16, 18, 20, 22, 24, 26, 28, 30]
ANCHOR_SIZES = (26, 28)
ANCHOR_SHARE = 0.90


def _run(cmd: list[str], timeout: float = 120) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def machine() -> dict:
    smi = _run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,"
                "clocks.max.mem", "--format=csv,noheader"])
    nvcc = _run(["nvcc", "--version"]).splitlines()
    return {"nvidia_smi": smi.splitlines(), "nvcc": nvcc[-1] if nvcc else "",
            "commit": tools.git_commit(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host_cpus": _run(["nproc"])}


def bench_binaries(build_dir: Path, lab_id: str) -> list[Path]:
    """bench-<lab> or, for a lab with two contracts, bench-<lab>-sum and -max."""
    return sorted(p for p in (build_dir / "tests").glob(f"bench-{lab_id}*") if p.is_file())


def run_json(binary: Path, out_dir: Path, args: list[str], timeout: float = 900) -> dict:
    """Runs `binary ARGS --json=FILE`: its JSON, exit code and output tail."""
    path = out_dir / f"{binary.name}.json"
    try:
        proc = subprocess.run([str(binary), *args, f"--json={path}"],
                              capture_output=True, text=True, timeout=timeout)
        code, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
        code, output = "timed_out", f"{e.stdout or ''}{e.stderr or ''} (timed out after {timeout} s)"
    result = json.loads(path.read_text()) if path.exists() else {}
    result["exit_code"] = code
    result["output"] = output[-3000:]
    path.unlink(missing_ok=True)
    return result


def bench(binary: Path, out_dir: Path) -> dict:
    return run_json(binary, out_dir, [f"--sizes={','.join(map(str, BENCH_SIZES))}"])


def studies(build_dir: Path, out_dir: Path) -> dict:
    """Every tests/tuning/*-study program: figures a handout quotes (lab 11's sort-first study)."""
    return {p.name: run_json(p, out_dir, [], timeout=600)
            for p in sorted((build_dir / "tests" / "tuning").glob("*-study")) if p.is_file()}


def anchor_check(bench_result: dict, anchors: dict[int, float]) -> dict:
    rows = {}
    for s in bench_result.get("sizes", []):
        a = anchors.get(s["log2n"])
        if a and s["status"] == "ok":
            rows[str(s["log2n"])] = {"gbps": round(s["gbps"], 1), "anchor": a,
                                     "share": round(s["gbps"] / a, 3)}
    # A lab without anchors (lab 10: no anchor was measured for it) has no such requirement.
    required = [rows.get(str(k)) for k in ANCHOR_SIZES if k in anchors]
    ok = all(r is not None and r["share"] >= ANCHOR_SHARE for r in required)
    return {"sizes": rows, "meets_90_percent_at_2^26_and_2^28": ok}


def cub_check(bench_result: dict) -> dict:
    """The lab against CUB at every size, both measured in the same process."""
    rows = {str(s["log2n"]): {"gbps": round(s["gbps"], 1), "cub_gbps": round(s["cub_gbps"], 1),
                              "ratio": round(s["gbps"] / s["cub_gbps"], 3) if s["cub_gbps"] else None}
            for s in bench_result.get("sizes", []) if s["status"] == "ok"}
    ok = bool(rows) and all(r["ratio"] is not None and r["ratio"] >= 1.0 for r in rows.values())
    return {"sizes": rows, "at_or_above_cub_at_every_size": ok,
            "lowest_ratio": min((r["ratio"] for r in rows.values() if r["ratio"]), default=None)}


def run(out_dir: Path, build_dir: Path, arch: str) -> int:
    t0 = time.time()
    out_dir.mkdir(parents=True, exist_ok=True)
    meson = tools.ensure_tools()
    tools.configure(build_dir, [f"-Dgpu_arch={arch}"])
    evidence: dict = {"machine": machine(), "command": "python3 -m grader gpucheck --out OUT"}
    built = tools.build(build_dir)
    evidence["build"] = {"ok": built.ok, "log_tail": built.log[-3000:]}
    if not built.ok:
        (out_dir / "gpucheck.json").write_text(json.dumps(evidence, indent=2))
        print(built.log[-6000:])
        return 1

    course = labmeta.load()
    labs: dict = {}
    for lab in course.labs:
        entry = {}
        for impl in ("solutions", "labs"):
            print(f"[gpucheck] {lab.id} {impl} ...", flush=True)
            run_ = run_gtest(build_dir / "tests" / f"{lab.id}-{impl}", timeout=900)
            entry[impl] = {"run": run_.to_dict(), "score": score(lab, run_).to_dict()}
        if lab.needs_gpu:
            print(f"[gpucheck] {lab.id} bench ...", flush=True)
            benches = {p.name: bench(p, out_dir) for p in bench_binaries(build_dir, lab.id)}
            entry["bench"] = benches
            # Anchors are for the lab's first contract: the int sum where it has two.
            main = next((b for b in benches.values() if b.get("contract") == "sum"),
                        next(iter(benches.values()), {}))
            entry["anchors"] = anchor_check(main, lab.anchor_gbps)
            entry["vs_cub"] = {name: cub_check(b) for name, b in benches.items()}
        labs[lab.id] = entry
    evidence["labs"] = labs
    # What `python3 -m grader grade` prints for the untouched skeletons and for
    # the solutions on this machine: the handouts quote it.
    for impl in ("labs", "solutions"):
        report = grade.GradeReport(commit=evidence["machine"]["commit"], date="", impl=impl,
                                   labs=[LabResult.from_dict(e[impl]["score"]) for e in labs.values()])
        evidence[f"grade_output_{impl}"] = (grade.details(report) + "\n\n" +
                                            grade.table(report)).strip()

    # CUB runs beside every lab in its bench; its H200 anchors are checked on
    # the first bench of the same contract (int sum or float max).
    peers = {}
    for peer in course.peers:
        contract = "max" if peer.id.endswith("max") else "sum"
        source = next((b for e in labs.values() for b in e.get("bench", {}).values()
                       if b.get("contract") == contract), {})
        # CUB's own figures only: the lab's time and detail stay with the lab.
        cub = {"sizes": [{"log2n": s["log2n"], "n": s["n"], "status": s["status"],
                          "gbps": s["cub_gbps"]} for s in source.get("sizes", [])]}
        peers[peer.id] = {"bench": cub, "anchors": anchor_check(cub, peer.anchor_gbps)}
    evidence["peers"] = peers

    print("[gpucheck] studies ...", flush=True)
    evidence["studies"] = studies(build_dir, out_dir)

    print("[gpucheck] expected failures (skeletons, mutants) and peers ...", flush=True)
    subprocess.run(meson + ["test", "-C", str(build_dir), "--no-rebuild", "--print-errorlogs",
                            "--suite", "skeletons", "--suite", "mutants", "--suite", "peers",
                            "--suite", "grader"], capture_output=True, text=True)
    testlog = build_dir / "meson-logs" / "testlog.json"
    suites = summarize(testlog) if testlog.exists() else {}
    evidence["meson_suites"] = suites
    if testlog.exists():
        evidence["meson_log"] = [
            {k: t.get(k) for k in ("name", "result", "duration", "stdout")}
            for t in map(json.loads, testlog.read_text().splitlines())]
    evidence["seconds"] = round(time.time() - t0, 1)
    (out_dir / "gpucheck.json").write_text(json.dumps(evidence, indent=2) + "\n")

    print(summary_table(evidence))
    bad = suites.get("failed") or any(
        e["solutions"]["run"]["status"] != "completed"
        or e["solutions"]["score"]["tests_failed"]
        or not e.get("anchors", {"meets_90_percent_at_2^26_and_2^28": True})[
            "meets_90_percent_at_2^26_and_2^28"]
        or (course.lab(lab_id).beats_cub and not all(
            v["at_or_above_cub_at_every_size"] for name, v in e.get("vs_cub", {}).items()
            if e["bench"][name].get("contract") == "sum"))
        for lab_id, e in labs.items())
    bad = bad or any(r["exit_code"] != 0 for r in evidence["studies"].values())
    return 1 if bad else 0


def course_beats_cub(lab_id: str) -> bool:
    try:
        return labmeta.load().lab(lab_id).beats_cub
    except KeyError:
        return False


def summary_table(ev: dict) -> str:
    lines = [f"GPU: {'; '.join(ev['machine']['nvidia_smi'])}  commit {ev['machine']['commit']}",
             f"{'lab':28} {'solution':>10} {'skeleton':>16} {'fraction':>9} {'thresh':>7} "
             f"{'2^26 GB/s':>10} {'anchor':>7} {'2^28 GB/s':>10} {'anchor':>7}"]
    for lab_id, e in ev["labs"].items():
        sol, skel = e["solutions"]["score"], e["labs"]["score"]
        sol_txt = f"{sol['tests_passed']}/{sol['tests_passed'] + sol['tests_failed']}"
        hint = (skel.get("first_failure") or {}).get("hint", "")
        skel_txt = f"fails:{hint}" if skel["tests_failed"] else "PASSES?!"
        frac = "-" if sol["fraction"] is None else f"{sol['fraction']:.3f}"
        a = e.get("anchors", {}).get("sizes", {})
        cells = []
        for k in ("26", "28"):
            r = a.get(k)
            cells += [f"{r['gbps']:.0f}" if r else "-", f"{r['anchor']:.0f}" if r else "-"]
        lines.append(f"{lab_id:28} {sol_txt:>10} {skel_txt:>16} {frac:>9} {sol['threshold']:>7.3f} "
                     f"{cells[0]:>10} {cells[1]:>7} {cells[2]:>10} {cells[3]:>7}")
    for lab_id, e in ev["labs"].items():
        for name, v in e.get("vs_cub", {}).items():
            if course_beats_cub(lab_id):
                lines.append(f"{name}: lowest ratio to CUB {v['lowest_ratio']}, at or above CUB "
                             f"at every size: {v['at_or_above_cub_at_every_size']}"
                             + ("" if e["bench"][name].get("contract") == "sum" else
                                " (float max: reported, not required)"))
    for pid, p in ev.get("peers", {}).items():
        a = p["anchors"]["sizes"]
        lines.append(f"{pid:28} {'':>10} {'':>16} {'':>9} {'':>7} "
                     + " ".join(f"{a[k]['gbps']:>10.0f} {a[k]['anchor']:>7.0f}" if k in a
                                else f"{'-':>10} {'-':>7}" for k in ("26", "28")))
    for name, r in ev.get("studies", {}).items():
        lines.append(f"{name}: exit {r['exit_code']}; "
                     + (r["output"].strip().splitlines() or [""])[-1])
    s = ev.get("meson_suites", {})
    lines.append(f"meson suites skeletons/mutants/peers/grader: {len(s.get('passed', []))} passed, "
                 f"{len(s.get('failed', []))} failed, {len(s.get('skipped', []))} skipped"
                 + (f" (failed: {', '.join(s['failed'])})" if s.get("failed") else ""))
    return "\n".join(lines)
