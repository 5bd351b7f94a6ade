"""What the workers of one GPU share in a batch, and the copy ceilings they measure."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ..engine.sharing import checker_service
from ..infra import gpus
from ..infra.trace import trace
from ..engine.sharing.reference_tools import ReferenceTools
from ..engine.sharing.gate import Gate

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
