"""What the workers of one GPU share in a batch, and the copy ceilings they measure."""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass

from ..engine.sharing import checker_service
from ..infra import gpus
from ..infra.trace import trace
from ..engine.sharing.reference_tools import ReferenceTools
from ..engine.sharing.gate import Gate
from ..labmeta import Lab

# A GPU's timed turns' kept checkers (batch --keep-timed-checkers): a turn's
# parts at most, one a GPU lab of the course.
POOL_CHECKERS = 10


@dataclass
class Ceiling:
    kind: str  # checker kind it was measured with
    before: float = 0.0
    after: float = 0.0
    calibrated: float | None = None
    device: str = ""


class GpuGroup:
    """What the workers of one GPU share: its gate, the copy ceilings its first
    worker measured, the reference's fractions and runners from that worker's
    preflight, and how many of them are still grading (the last one measures again)."""

    def __init__(
        self,
        workers: int,
        shared: bool,
        run_slots: int | None = None,
        keep_timed: bool = False,
        gpu: gpus.Gpu | None = None,
    ) -> None:
        # A drain for half the workers' timed runs (gate.py says why).
        self.gate = Gate("gpu", run_slots, drain_at=max(1, workers // 2)) if shared else None
        self.ceilings: dict[str, Ceiling] = {}
        self.reference_fraction: dict[str, float | None] = {}  # lab id -> preflight's figure
        # The reference's runners that the preflight kept (reference_tools.py)
        self.reference_tools: ReferenceTools | None = None
        self.grading = workers
        self.lock = threading.Lock()
        # The references its workers grade side by side (reference_check.py),
        # when they share the GPU and the batch has a preflight.
        self.preflight: SharedPreflight | None = None
        # How many kept checkers each worker keeps for its untimed runs, and
        # the timed turns' pool (batch --keep-timed-checkers: at most a turn's
        # parts, POOL_CHECKERS), in the memory the run slots leave on `gpu`
        # (gpus.kept_checkers_each); None: as many as it has kinds (no GPU's
        # memory to share). The pool ends with the last worker: the ceilings
        # measured after find none.
        keep_timed = shared and keep_timed
        self.kept_each: int | None = None
        if gpu is not None and gpu.memory_mib and run_slots:
            keep_timed = keep_timed and gpus.kept_checkers_each(gpu, 1, run_slots) >= POOL_CHECKERS
            pool = POOL_CHECKERS * gpus.KEPT_CHECKER_GIB if keep_timed else 0
            self.kept_each = gpus.kept_checkers_each(gpu, workers, run_slots, pool)
        self.timed_checkers = checker_service.Pool() if keep_timed else None
        each = "any" if self.kept_each is None else self.kept_each
        trace(
            f"gpu group: {workers} workers, {run_slots} slots, {each} kept checkers each, "
            f"timed pool: {keep_timed}"
        )

    def leave(self) -> bool:
        """One worker is done; True for the last."""
        with self.lock:
            self.grading -= 1
            last = self.grading == 0
        if last and self.timed_checkers is not None:
            self.timed_checkers.close()
        return last


# How long a kind of lab's reference takes to grade, roughly (lab 01's timed
# run uses every core; lab 11's tests cover four variants, lab 09's two contracts).
_WEIGHT = {"cpu_sum": 4, "gpu_float_sum": 3, "gpu_sum_max": 3, "gpu_max": 2}


def lab_weight(lab: Lab) -> int:
    return _WEIGHT.get(lab.kind, 1)


class SharedPreflight:
    """One GPU's references, taken a lab at a time by its workers once the
    lead has filled the policy check's cache (`warmed`)."""

    def __init__(self, labs: list[Lab]) -> None:
        self.labs = labs  # the labs this GPU's workers grade
        self.todo: queue.Queue[Lab] = queue.Queue()
        # The longest first, so that no worker starts one last while the others idle.
        for lab in sorted(labs, key=lambda lab: -lab_weight(lab)):
            self.todo.put(lab)
        self.warmed = threading.Event()
        self.failed = threading.Event()  # a reference did not pass: no worker takes another

    def next_lab(self) -> Lab | None:
        try:
            return self.todo.get_nowait()
        except queue.Empty:
            return None
