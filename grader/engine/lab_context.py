"""What grading one lab carries (lab_grading.py runs its steps over it):
GradeOptions, what the caller decides, frozen and passed whole; and LabRun,
the context a run accumulates step by step. One value each, so that a new
choice is one field read by the step that needs it, not one more parameter
forwarded by every caller."""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import labmeta
from ..infra import toolchain
from ..results import BinaryRun, LabResult
from . import run_env, sanitize as sanitize_mod
from .checker_run import CheckerOptions
from .lab_parts import Phases, TimedPart, checker_target, runner_target
from .policy import policy
from .sharing.gate import Gate
from .sharing.reference_tools import ReferenceTools


@dataclass(frozen=True)
class GradeOptions:
    """What the caller decides about grading one lab of the tree at `repo`
    (its `impl` folder). Frozen and passed whole: a student's `grade` sets a
    few fields, a batch worker most, and a step reads the one it needs."""

    impl: str = "labs"
    repo: Path = toolchain.REPO
    timeout: float = 600.0
    perf: bool = True
    seed: int | None = None  # None: a new_seed()
    env: dict[str, str] | None = None
    sanitize: bool = True
    # Where the runner runs: a grader.infra.sandbox.Cell (--sandbox) or a
    # grader.infra.isolation.Contained; None: a fresh Contained for this lab.
    isolation: Any = None
    ceiling_gbps: float | None = None
    gpu_expected: bool | None = None  # None: whether this process sees a GPU
    linked_policy: bool = True
    policy_work: Path | None = None  # None: the build folder's "policy"
    # The GPU's gate (grader/engine/sharing/gate.py), held shared while a checker runs.
    gate: Gate | None = None
    # When given (and perf is on), the timed tests do not run here: the lab's
    # TimedPart is appended to it, to run later and alone.
    timed_later: list[TimedPart] | None = None
    # The GPUs the checker will see and whose they are (a batch worker's:
    # one), for cannot_grade; None: this process's visible GPUs.
    gpu_count: int | None = None
    where: str = "this machine"
    # The longest a call may take while `gate` is shared (batch
    # --shared-call-timeout); None: the call timeout as usual.
    shared_call_timeout: float | None = None
    # CUDA_DEVICE_MAX_CONNECTIONS while `gate` is shared (batch
    # --gpu-connections), never in a timed run (checker_env's) nor for a lab
    # whose calls span GPUs (its kernels wait on each other's flags); None: CUDA's.
    gpu_connections: int | None = None
    # The reference's runners a tool's unclean ending is judged against
    # (shared_gpu.sanitize_lab); None: such an ending costs nothing.
    reference_tools: ReferenceTools | None = None

    @property
    def times_later(self) -> bool:
        """The timed tests are held back (TimedPart), not run here."""
        return self.timed_later is not None and self.perf

    @property
    def times_here(self) -> bool:
        """The timed tests run here, in the lab's one checker run."""
        return self.perf and not self.times_later


@dataclass
class LabRun:
    """What grading one lab accumulates, step by step: the context every step
    reads and writes. `stack` holds what the steps opened (the linked check's
    thread, the isolation) and closes it however the steps end."""

    lab: labmeta.Lab
    build_dir: Path
    options: GradeOptions
    phases: Phases
    seed: int
    gpu_expected: bool
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    violations: list[policy.Violation] = field(default_factory=list)
    early: concurrent.futures.Future | None = None  # the linked check beside the build
    read_built: list[policy.Violation] | None = None
    iso: Any = None
    iso_stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    run: BinaryRun | None = None
    rerun: str | None = None
    tools: list[sanitize_mod.SanitizerRun] | None = None
    result: LabResult | None = None

    @property
    def target(self) -> str:
        return runner_target(self.lab, self.options.impl)

    @property
    def lab_dir(self) -> Path:
        return self.options.repo / self.options.impl / self.lab.id

    @property
    def runner(self) -> Path:
        return self.build_dir / "tests" / self.target

    @property
    def checker(self) -> Path:
        return self.build_dir / "tests" / checker_target(self.lab)

    @property
    def sandboxed(self) -> bool:
        return hasattr(self.options.isolation, "build")

    @functools.cached_property
    def untimed_env(self) -> dict[str, str] | None:
        """The untimed runs' environment, taken once (run_env.sharing); a run
        that times (alone, or the preflight's) has checker_env's queues."""
        o = self.options
        return run_env.sharing(o.env, self.lab, o.gate is not None, o.gpu_connections)

    @property
    def shared_bound(self) -> float | None:
        o = self.options
        return o.shared_call_timeout if o.gate is not None and self.lab.needs_gpu else None

    def checker_options(self) -> CheckerOptions:
        """run_checker's options that the untimed and the timed run share."""
        o = self.options
        return CheckerOptions(
            impl=o.impl,
            timeout=o.timeout,
            seed=self.seed,
            env=o.env,
            ceiling_gbps=o.ceiling_gbps,
            gpu_expected=self.gpu_expected and self.lab.needs_gpu,
            call_timeout=min(60.0, o.timeout / 2),
        )

    def policy_args(self) -> tuple[labmeta.Lab, Path, Path, Path, Path, str]:
        """The linked policy check's arguments (lab_policy.linked_violations)."""
        work = self.options.policy_work or self.build_dir / "policy"
        return (self.lab, self.lab_dir, self.options.repo, work, self.build_dir, self.target)
