"""gpucheck's parts that run a repository script as a child and keep its
output and the JSON it wrote: profile, attacks, sandbox, class. Each is a
whole command of its own (`grader profile`, tests/attacks, `grader batch
--sandbox`, tests/submissions); gpucheck only runs it, judges its exit and
keeps its evidence (a ScriptRun), the same way for all four."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..infra import toolchain as tools
from ..infra.evidence import ScriptRun

SCRIPT_PARTS = ("profile", "attacks", "sandbox", "class")
PART_FIELDS = {"class": "class_run"}  # GpuCheck's field where the part is not a Python name
ATTACK_LABS = ("07_atomic_finish", "09_shuffle_vector_loads")


def _script(args: list[str], out_dir: Path, name: str, timeout: float = 1800) -> ScriptRun:
    """A repository script's run: exit code, output tail, and the JSON it wrote.
    Its whole output goes to OUT/NAME.log as it comes: a GPU call cut off by its
    time limit still shows how far the script got."""
    from ..infra import proc

    done = proc.run(
        [sys.executable, *args],
        timeout=timeout,
        cwd=tools.REPO,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        options=proc.RunOptions(log=out_dir / f"{Path(name).stem}.log"),
    )
    result = ScriptRun(
        command=" ".join(["python3", *args]),
        exit_code=done.code,
        seconds=round(done.seconds, 1),
        output=done.output[-6000:],
    )
    path = out_dir / name
    if path.exists():
        result.evidence = json.loads(path.read_text())
    print(done.output[-3000:], flush=True)
    return result


def profile_part(out_dir: Path, build_dir: Path) -> ScriptRun:
    """Every reference under ncu (OUT/profile.json, the file a release reads), then
    what a student sees: 02-04 (solutions as theirs) and an untouched skeleton."""
    base = ["-m", "grader", "profile", "--build-dir", str(build_dir)]
    runs = {
        "references": (
            _script(
                base + ["--references", "--json", str(out_dir / "profile.json")],
                out_dir,
                "profile.json",
            ),
            0,
        ),
        "solutions_02_03_04": (
            _script(
                base
                + [
                    "02",
                    "03",
                    "04",
                    "--impl",
                    "solutions",
                    "--json",
                    str(out_dir / "profile-02-04.json"),
                ],
                out_dir,
                "profile-02-04.json",
            ),
            0,
        ),
        "skeleton_03": (
            _script(
                base + ["03", "--json", str(out_dir / "profile-skeleton.json")],
                out_dir,
                "profile-skeleton.json",
            ),
            1,
        ),
    }
    wrong = [k for k, (r, want) in runs.items() if r.exit_code != want]
    return ScriptRun(
        exit_code=1 if wrong else 0,
        seconds=round(sum(r.seconds for r, _ in runs.values()), 1),
        runs={k: r for k, (r, _) in runs.items()},
        output=(
            f"profile: unexpected exit in {', '.join(wrong)}"
            if wrong
            else "profile: references profiled, 02-04 shown, the skeleton refused"
        ),
    )


def attacks_part(out_dir: Path, arch: str, attack_labs: tuple[str, ...] = ATTACK_LABS) -> ScriptRun:
    """tests/attacks on attack_labs (07 and 09, unless a call can afford only one),
    with and without --sandbox."""
    labs = [a for lab in attack_labs for a in ("--lab", lab)]
    result = _script(
        [
            "tests/attacks/run_attacks.py",
            str(out_dir),
            *labs,
            "--arch",
            arch,
            "--mode",
            "contained-policy",
            "--mode",
            "sandboxed-split",
        ],
        out_dir,
        "attacks.json",
    )
    result.evidence = {
        lab: json.loads((out_dir / f"attacks-{lab}.json").read_text())
        for lab in attack_labs
        if (out_dir / f"attacks-{lab}.json").exists()
    }
    return result


def sandbox_part(out_dir: Path, arch: str, labs_wanted: tuple[str, ...]) -> ScriptRun:
    """batch --sandbox of the reference solutions on this machine's own
    compilers: each lab must get full marks (and the preflight runs first).
    All eleven labs, preflight and student, take about 9 minutes on an H200,
    more than one GPU call may run: `--sandbox-labs` splits them over calls,
    and `--merge` joins the runs."""
    import shutil
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="sandbox-batch-"))
    shutil.copytree(tools.REPO / "solutions", work / "reference" / "labs")
    labs = [a for lab in labs_wanted for a in ("--lab", lab)]
    result = _script(
        [
            "-m",
            "grader",
            "batch",
            str(work / "reference"),
            "--out",
            str(work / "out"),
            "--sandbox",
            "--arch",
            arch,
            *labs,
        ],
        out_dir,
        "sandbox-batch",
    )
    res = (
        json.loads((work / "out" / "students" / "reference" / "result.json").read_text())
        if (work / "out" / "students" / "reference" / "result.json").exists()
        else {}
    )
    result.student = res
    result.batch = (
        json.loads((work / "out" / "batch.json").read_text())
        if (work / "out" / "batch.json").exists()
        else {}
    )
    graded = [l for l in res.get("labs", []) if l.get("lab") in labs_wanted]
    full = len(graded) == len(labs_wanted) and all(l["points"] == l["max_points"] for l in graded)
    result.labs_graded = sorted(l["lab"] for l in graded)
    if not full:
        result.exit_code = result.exit_code or 1
    result.full_marks = full
    return result


def class_part(out_dir: Path, arch: str) -> ScriptRun:
    # 60 s per lab: the class's hanging kernel costs that much before it is killed.
    return _script(
        ["tests/submissions/run_class.py", str(out_dir), "--arch", arch, "--timeout", "60"],
        out_dir,
        "class-run.json",
    )
