"""What a batch is asked to do (BatchConfig, whose fingerprint decides which
stored results are reused), and how it stops: BatchError before anyone is
graded, Interrupted on a signal."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import labmeta
from ..infra import toolchain
from ..infra.sandbox import Limits

# A batch's ceiling may differ from the course's calibration by this much
# (another GPU of the same model, a warmer room).
CEILING_CALIBRATION_BOUND = 0.15

# CUDA_DEVICE_MAX_CONNECTIONS of the runs that share a GPU (batch --gpu-connections).
# The driver creates one context at a time for the whole machine, and a context
# with one queue is made in about a third of the time of one with CUDA's eight,
# and a correct GPU lab starts ten processes: the class grades faster with one,
# every outcome as expected (see docs/decisions.md, "One queue per context for
# the runs that share a GPU").
GPU_CONNECTIONS = 1


class BatchError(toolchain.SetupError):
    """The batch cannot grade here; nobody's grade was written. exit_code 3."""


@dataclass
class BatchConfig:
    out: Path
    lab_ids: list[str] | None = None
    timeout: float = 600.0
    gpus: list[str] | None = None  # nvidia-smi indices or UUIDs; default: every GPU
    arch: str = "auto"
    perf: bool = True
    sandbox: bool = False  # the runner in bubblewrap (sandbox.py)
    sandbox_limits: Limits | None = None
    sanitize: bool = True  # small cases under compute-sanitizer (GPU labs)
    linked_policy: bool = True  # off only in the attack suite, to test the rest alone
    roster: dict[str, str] | None = None  # submission -> student id
    preflight: bool = True  # grade the reference in this setting first
    accept_ceiling: bool = False  # grade even when the ceiling is off the calibration
    slurm: bool = False  # one Slurm job-array task per submission (slurm.py)
    partition: str | None = None
    slurm_args: list[str] | None = None  # more sbatch options, e.g. --account=X
    slots: int = 4  # Slurm: tasks at once (each slot keeps one build tree)
    wait: bool = True  # Slurm: wait for the job and write the gradebook
    # Students graded at once per GPU (grader/engine/sharing/gate.py); None: as many as
    # the machine's cores allow (gpus.students_per_gpu). Without a GPU, one.
    jobs_per_gpu: int | None = None
    gpu_runs: int | None = None  # runs sharing a GPU at once (None: gpus.GPU_RUNS_AT_ONCE)
    # Seconds one call of a test run may take while other students' runs share
    # the GPU (None: the usual half of `timeout`, at most 60).
    shared_call_timeout: float | None = None
    # CUDA_DEVICE_MAX_CONNECTIONS for the runs that share a GPU; timed runs have
    # checker_run.TIMED_CONNECTIONS (checker_run.checker_env).
    gpu_connections: int = GPU_CONNECTIONS
    # compute-sanitizer runs at once (sanitizer_places.SANITIZER_SLOTS; None: a quarter of
    # the cores). It moves no grade: not in the fingerprint.
    sanitizer_places: int | None = None
    # One checker of each kind a worker for its untimed runs (checker_service.py);
    # it moves no grade: not in the fingerprint.
    kept_checkers: bool = True
    # A GPU's timed turns borrow kept checkers too (checker_service.Pool): to be
    # measured against the default before it becomes one.
    keep_timed_checkers: bool = False

    def __post_init__(self) -> None:
        # Workers compile and run in other folders: a relative --out would name
        # another place there.
        self.out = Path(self.out).absolute()

    def fingerprint(self) -> str:
        """What a result depends on besides the submission: a result graded with
        other options, another grader or another course file is not reused."""
        parts = {
            "labs": sorted(self.lab_ids or []),
            "perf": self.perf,
            "sandbox": self.sandbox,
            "sanitize": self.sanitize,
            "arch": self.arch,
            "policy": self.linked_policy,
            "limits": asdict(self.sandbox_limits or Limits()),
            # Only when set, so that results graded before the option stay reusable.
            **({"shared_call": self.shared_call_timeout} if self.shared_call_timeout else {}),
            "connections": self.gpu_connections,
            "grader": toolchain.git_commit(),
            "labs_toml": hashlib.sha256(labmeta.LABS_TOML.read_bytes()).hexdigest()[:16],
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


class Interrupted(BaseException):
    """The batch was told to stop (SIGTERM); exit_code is the shell's 128+signal."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by signal {signum}")
        self.exit_code = 128 + signum
