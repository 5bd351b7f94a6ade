"""What a batch's preflight compiles, all at once before its first timed run:
the skeleton's and the reference's facts for the policy check
(engine/policy/facts_cache.py) on every core, and, where one lead grades the
references in turn, every lab's reference build in one ninja call.

Why: graded in turn, each lab built its reference and compiled both
instructor's files for the check one after another while the machine's cores
stood idle: most of a class run's set-up, most of each lab's share of it
compiling (see docs/decisions.md, "The preflight warms every lab on every core
first"). Where a GPU's workers share the references (reference_check.py), each
builds its own lab's, and the lead fills the cache before any takes one.

Not in a timed run's way: a lead warms after every lead has measured its
copy ceilings (the orchestrator's barriers), and a lead alone times no
reference before every lead has warmed (Worker.preflight, LeadTurns.warmed)."""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Callable
from pathlib import Path

from .. import labmeta
from ..engine import lab_grading
from ..engine.policy import lab_policy
from ..infra import log, toolchain
from ..infra.trace import trace


def warm(
    labs: list[labmeta.Lab],
    src: Path,
    build: Path,
    policy_work: Path | None,
    build_here: bool,
    progress: Callable[[str], None] = log.progress,
) -> None:
    """Builds the references already installed in the worker's tree `src`
    (`build_here`: not in a sandbox, where the build runs inside it, lab by
    lab, as a student's does) and fills the facts cache `policy_work` (None:
    no linked policy check). What fails here is done again by each lab's own
    build and check, which report it as the preflight does (a failed compile
    is never cached); an exception is named in one line."""
    targets = [lab_grading.runner_target(lab, "labs") for lab in labs]
    compiles = []
    if policy_work is not None:
        for lab, target in zip(labs, targets):
            compiles += lab_policy.baseline_compiles(lab, src, policy_work, build, target)
    cores = max(1, len(os.sched_getaffinity(0)))
    with concurrent.futures.ThreadPoolExecutor(cores) as pool:
        pending = [pool.submit(c) for c in compiles]
        if build_here and targets:
            built = toolchain.build(build, targets)
            trace(f"preflight built {len(targets)} references in {build}: {built.ok}")
        failed = [e for e in (f.exception() for f in pending) if e is not None]
    if failed:
        progress(f"[batch] preflight: {len(failed)} early compile(s) failed ({failed[0]})")
    trace(f"preflight compiled {len(compiles)} instructor's files for the policy check")
