"""How fast a batch grades and where its time goes: the ETA in each progress
line, DIR/status.json while it runs (for a batch followed from elsewhere), and
the summary in DIR/batch.json at the end."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..infra.atomic import write_atomic
from ..results import StudentResult

PHASES = ("build", "policy", "tests", "sanitizer")


@dataclass
class Pace:
    total: int  # submissions in the batch
    already: int  # graded by an earlier run, not this one
    workers: int
    started: float = field(default_factory=lambda: time.monotonic())
    graded: int = 0  # submissions this run finished
    student_labs: int = 0
    phases: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))

    def add(self, res: StudentResult) -> None:
        self.graded += 1
        self.student_labs += len(res.labs)
        for lab in res.labs:
            for phase, seconds in lab.timing.items():
                self.phases[phase] = self.phases.get(phase, 0.0) + seconds

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def left(self) -> int:
        return self.total - self.already - self.graded

    def eta(self) -> float | None:
        """Seconds to the end at this run's pace so far (None before the first)."""
        return self.elapsed / self.graded * self.left if self.graded else None

    def per_hour(self) -> float:
        return self.student_labs / self.elapsed * 3600 if self.elapsed > 0 else 0.0

    def progress(self) -> str:
        eta = self.eta()
        return (
            f"[{self.elapsed:.0f} s"
            + (f", about {_duration(eta)} to go" if eta and self.left else "")
            + "]"
        )

    def to_dict(self) -> dict:
        busy = sum(self.phases.values())
        return {
            "submissions": self.total,
            "graded_before": self.already,
            "graded_now": self.graded,
            "left": self.left,
            "student_labs_now": self.student_labs,
            "elapsed_s": round(self.elapsed, 1),
            "eta_s": _round(self.eta()),
            "student_labs_per_hour": round(self.per_hour(), 1),
            "workers": self.workers,
            # Summed over workers: what each phase cost, and the rest of the
            # workers' time (setup, ceilings, preflight, writing, idling).
            "phase_seconds": {k: round(v, 1) for k, v in self.phases.items()},
            "other_seconds": round(max(0.0, self.elapsed * self.workers - busy), 1),
        }

    def write_status(self, path: Path) -> None:
        write_atomic(path, json.dumps(self.to_dict(), indent=2) + "\n")

    def summary(self) -> str:
        d = self.to_dict()
        where = ", ".join(f"{k} {v:.0f} s" for k, v in d["phase_seconds"].items() if v)
        return (
            f"[batch] {self.student_labs} student-labs in {self.elapsed:.0f} s "
            f"({d['student_labs_per_hour']:.0f} per hour, {self.workers} worker(s)); "
            f"time summed over workers: {where or 'none graded'}, "
            f"other {d['other_seconds']:.0f} s"
        )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)
