"""What the workers of one GPU share in a batch, and the copy ceilings they measure."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ..engine import checker_service
from ..engine.reference_tools import ReferenceTools
from ..infra.gate import Gate
from .batch_config import CEILING_DRIFT_BOUND


@dataclass
class Ceiling:
    kind: str  # checker kind it was measured with
    before: float = 0.0
    after: float = 0.0
    calibrated: float | None = None
    device: str = ""

    def drifted(self) -> bool:
        return bool(
            self.before
            and self.after
            and abs(self.after - self.before) > CEILING_DRIFT_BOUND * self.before
        )


class GpuGroup:
    """What the workers of one GPU share: its gate, the copy ceilings its first
    worker measured, the reference's fractions and runners from that worker's
    preflight, and how many of them are still grading (the last one measures again)."""

    def __init__(
        self, workers: int, shared: bool, run_slots: int | None = None, keep_timed: bool = False
    ) -> None:
        # A drain for half the workers' timed runs (gate.py says why).
        self.gate = Gate("gpu", run_slots, drain_at=max(1, workers // 2)) if shared else None
        self.ceilings: dict[str, Ceiling] = {}
        self.reference_fraction: dict[str, float | None] = {}  # lab id -> preflight's figure
        # The reference's runners that the preflight kept (reference_tools.py)
        self.reference_tools: ReferenceTools | None = None
        self.grading = workers
        self.lock = threading.Lock()
        # The timed turns' kept checkers (batch --keep-timed-checkers), ended
        # with the last worker: the ceilings measured after find none.
        self.timed_checkers = checker_service.Pool() if shared and keep_timed else None

    def leave(self) -> bool:
        """One worker is done; True for the last."""
        with self.lock:
            self.grading -= 1
            last = self.grading == 0
        if last and self.timed_checkers is not None:
            self.timed_checkers.close()
        return last
