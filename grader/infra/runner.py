"""How the trusted checker starts a lab's code: the sandbox, the namespaces
and compute-sanitizer each wrap the runner in a prefix of their own."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class RunnerSpec:
    """How the checker starts the lab's code."""

    binary: Path  # as the wrapper will see it
    prefix: list[str] = field(default_factory=list)  # sandbox, namespace, sanitizer ...
    user: str = ""  # "nobody" when the grader is root
    workdir: Path | None = None  # its cwd, HOME and TMPDIR
