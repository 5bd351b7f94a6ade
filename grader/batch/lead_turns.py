"""What the leads of a batch (the first worker of each GPU: it measures the
copy ceilings and grades the reference solutions) do in turn, so that no lead's
work moves another's yardstick.

A GPU's copy ceiling is its own: the leads measure theirs at once, one GPU
each. The host's (lab 01's yardstick) is the machine's: every core copies at
once, so a second copy beside it halves what it reads. Two leads measuring it
together read two different ceilings, and the same code would pass on one GPU
and fail on the other (see docs/decisions.md, "One host copy ceiling per
batch, measured by one lead alone"). So one lead measures
the host's ceiling, alone, after the GPUs' and before anything else, and every
worker of the batch grades lab 01 against that one figure; the batch measures
it again once every worker is done (the drift check).

The preflight times each lab's reference for the feedback: lab 01's on the host
one lead at a time, before any lead times a GPU lab's (as a student's lab 01
holds the whole machine for its timed tests: the orchestrator's machine gate)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Protocol

from .. import labmeta
from .config import CEILING_CALIBRATION_BOUND, BatchConfig, BatchError
from .gpu_group import Ceiling

HOST = "cpu"  # the Ceiling key of the host's copy (lab 01), as measure_ceilings names it


class Lead(Protocol):
    """What a lead is here (batch_worker.Worker): its group's ceilings, and how
    it measures them."""

    ceilings: dict[str, Ceiling]

    def measure_ceilings(
        self, labs: list[labmeta.Lab], course: labmeta.Course, when: str, sides: tuple[str, ...]
    ) -> None: ...


class LeadTurns:
    """The barriers and the turn the leads share; of one lead (`LeadTurns(1)`)
    none waits."""

    def __init__(self, leads: int = 1, host: contextlib.AbstractContextManager | None = None):
        """host: what a host lab's timing holds (a Slurm task: the node's lock,
        infra/node_lock.py); by default the leads' own lock."""
        self._barriers = [threading.Barrier(max(1, leads)) for _ in range(4)]
        self._gpus_measured, self._measured, self._warmed, self._hosted = self._barriers
        self._host = host or threading.Lock()
        self.host_ceiling: Ceiling | None = None
        self._past_host = threading.local()

    def measure_before(
        self, worker: Lead, labs: list[labmeta.Lab], course: labmeta.Course, first: bool
    ) -> None:
        """This lead's GPU's ceiling, beside the other leads'; then the first
        lead's host ceiling, alone, in the host's turn (a Slurm task's: the
        node's); then that one host ceiling is every lead's group's (a worker's
        `ceilings` is its group's)."""
        worker.measure_ceilings(labs, course, "before", sides=("gpu",))
        wait_at(self._gpus_measured)
        if first:
            with self._host:
                worker.measure_ceilings(labs, course, "before", sides=(HOST,))
            self.host_ceiling = worker.ceilings.get(HOST)
        wait_at(self._measured)  # no lead compiles while another measures its ceilings
        if self.host_ceiling is not None:
            worker.ceilings[HOST] = self.host_ceiling

    def warmed(self) -> None:
        """Every lead's preflight compiles are done: the timing starts."""
        wait_at(self._warmed)

    @contextlib.contextmanager
    def timing(self, on_host: bool) -> Iterator[None]:
        """A reference's tests, timed: on the host one lead at a time, and on a
        GPU only once every lead is past its host labs."""
        if on_host:
            with self._host:
                yield
            return
        self.past_host()
        yield

    def past_host(self) -> None:
        """This lead is done with its host labs (once a lead: a lead with no GPU
        lab calls it at the end of its preflight)."""
        if not getattr(self._past_host, "done", False):
            self._past_host.done = True
            wait_at(self._hosted)

    def abort(self) -> None:
        """A lead that failed never comes to the others' barriers."""
        for b in self._barriers:
            b.abort()


def wait_at(barrier: threading.Barrier) -> None:
    """barrier.wait(), which a lead that failed has broken: then go on."""
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        pass


def check_calibration(worker: Lead, config: BatchConfig) -> None:
    """A lead's GPU ceiling, refused where it is far off the course's calibration."""
    c = worker.ceilings.get("gpu")
    if c is None or c.calibrated is None:
        return
    off = abs(c.before - c.calibrated) / c.calibrated
    if off > CEILING_CALIBRATION_BOUND and not config.accept_ceiling:
        raise BatchError(
            f"the copy ceiling measured on {c.device} ({c.before:.0f} GB/s) is {off:.0%} off the "
            f"course's calibration for it ({c.calibrated:.0f} GB/s, grader/labs.toml): the GPU "
            "is busy, throttled or not what it seems. Nobody was graded; fix the machine, or "
            "pass --accept-ceiling to grade against what it measures."
        )
