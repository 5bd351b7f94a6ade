"""What a GPU run records, as typed data (schema version 2).

Four files come from a GPU machine: `gpucheck.json` (GpuCheck), `bench.json`
(BenchFile), `profile.json` (ProfileFile) and `calibration.json`
(CalibrationFile). Each carries `schema_version` and `kind`, so that a reader
can refuse a file it does not understand instead of misreading it.

Two parts stay plain JSON objects on purpose: what a repository script writes
about its own run (attacks, the class, a sandboxed batch: `ScriptRun.evidence`)
and what a study program or Nsight Compute reports (`Study.report`,
`ProfileFile.profiles`). Their layouts belong to those programs, and the
evidence keeps them verbatim rather than a second copy of their schemas.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...results import BinaryRun
from ...results import LabResult

# 2: a bench's floor_us is the larger of the launch and the bytes (1 summed
# them, which a launch-bound call beats), with bytes_us and floor_below_all.
SCHEMA_VERSION = 2
ANCHOR_SHARE = 0.90  # a reference must reach this share of its H200 anchor ...
ANCHOR_SIZES = (26, 28)  # ... at these log2 sizes (DESIGN.md, anchors/h200.md)


def opt(default: Any = None) -> Any:
    """A field that may be absent from the JSON: left out when it holds its default,
    so that a run of some parts records only those parts."""
    if isinstance(default, (list, dict)):
        return field(default_factory=type(default), metadata={"omit": True})
    return field(default=default, metadata={"omit": True})


def key(name: str) -> Any:
    """A required field whose JSON key is not a Python name (`class`)."""
    return field(metadata={"key": name})


@dataclass
class Machine:
    nvidia_smi: list[str]  # nvidia-smi's CSV lines: name, driver, memory, clocks
    nvcc: str
    commit: str
    date: str
    host_cpus: str

    def _smi(self, i: int, default: str) -> str:
        cells = (self.nvidia_smi or [""])[0].split(", ")
        return cells[i] if len(cells) > i and cells[i] else default

    @property
    def gpu(self) -> str:
        return self._smi(0, "unknown GPU")

    @property
    def driver(self) -> str:
        return self._smi(1, "?")

    @property
    def memory(self) -> str:
        return self._smi(2, "?")

    @property
    def cuda(self) -> str:
        m = re.search(r"cuda_(\d+(?:\.\d+)*)", self.nvcc)
        return m.group(1) if m else "?"


@dataclass
class Build:
    ok: bool
    log_tail: str
    seconds: float | None = opt()  # not recorded by the earliest runs


@dataclass
class BenchSize:
    log2n: int
    n: int
    status: str  # ok | wrong | skipped (no memory) | ...
    gbps: float | None = opt()
    median_ms: float | None = opt()
    # CUB DeviceReduce on the same input, same process, in turn with the lab.
    cub_gbps: float | None = opt()
    cub_median_ms: float | None = opt()
    # The floor of a call (common/bench_device.hpp, bench_with_floor): the larger
    # of an empty kernel's launch, timed with the lab and CUB in the same batches
    # and rounds, and the input's bytes at the theoretical bandwidth. The larger,
    # not the sum: a batch overlaps call k's reading with call k+1's launch.
    launch_us: float | None = opt()
    bytes_us: float | None = opt()
    floor_us: float | None = opt()
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def floor_gbps(self) -> float | None:
        """The floor as GB/s of 4-byte elements read."""
        return 4 * self.n / (self.floor_us * 1e3) if self.floor_us else None

    def below_floor(self) -> list[str]:
        """The timed calls (lab, cub) faster than the floor: none where the floor is
        one. A floor a call beats is no lower bound, and every "x the floor" figure
        read against it overstates how close the call is to the least it can cost."""
        if not self.ok or not self.floor_us:
            return []
        timed = (("lab", self.median_ms), ("cub", self.cub_median_ms))
        return [who for who, ms in timed if ms is not None and ms * 1e3 < self.floor_us]


@dataclass
class BenchRun:
    """One bench program (tests/bench/bench_main.cu) over sizes, and how it ended."""

    sizes: list[BenchSize]
    name: str = opt("")
    contract: str = opt("")  # sum | max | float sum
    device: str = opt("")
    ceiling_gbps: float | None = opt()
    theoretical_gbps: float | None = opt()
    exit_code: int | None = opt()  # None: it did not end (timed out)
    timed_out: bool = opt(False)
    output: str = opt("")
    lab: str = opt("")  # the lab it measured (`grader bench` records it)
    # False: CUB's figures come from the run's CUB peer bench, not this process
    # (runs before CUB was timed beside each lab).
    cub_same_process: bool = opt(True)
    # log2n -> the calls that beat the floor there, for every size with a floor:
    # all lists empty where the floor holds. None: the run did not check.
    floor_below_all: dict[int, list[str]] | None = opt()

    def at(self, log2n: int) -> BenchSize | None:
        return next((s for s in self.sizes if s.log2n == log2n), None)

    def floor_check(self) -> dict[int, list[str]] | None:
        """floor_below_all from the figures (None where no size has a floor)."""
        floored = [s for s in self.sizes if s.ok and s.floor_us]
        return {s.log2n: s.below_floor() for s in floored} if floored else None

    @property
    def floor_holds(self) -> bool | None:
        """Every timed call at or above the floor at every size (None: no floor)."""
        check = self.floor_check()
        return None if check is None else not any(check.values())


@dataclass
class AnchorRow:
    gbps: float
    anchor: float
    share: float


@dataclass
class AnchorCheck:
    """A bench against the H200 anchors: the share reached at each anchored size."""

    sizes: dict[int, AnchorRow]
    meets_required_share: bool  # every required size at or above required_share
    required_share: float = ANCHOR_SHARE
    required_sizes: list[int] = field(default_factory=lambda: list(ANCHOR_SIZES))


@dataclass
class CubRow:
    gbps: float
    cub_gbps: float
    ratio: float | None


@dataclass
class CubCheck:
    sizes: dict[int, CubRow]
    at_or_above_cub_at_every_size: bool
    lowest_ratio: float | None


@dataclass
class ImplRun:
    """One implementation (solutions or labs) through the lab's checker."""

    run: BinaryRun
    score: LabResult
    seconds: float | None = opt()  # not recorded by the earliest runs


@dataclass
class SanitizerRun:
    seconds: float
    tools: dict[str, str]  # memcheck -> clean | findings | ...


@dataclass
class LabEvidence:
    solutions: ImplRun | None = opt()
    labs: ImplRun | None = opt()  # the untouched skeleton
    sanitizer: SanitizerRun | None = opt()
    bench: dict[str, BenchRun] = opt({})  # bench binary name -> its run
    anchors: AnchorCheck | None = opt()
    vs_cub: dict[str, CubCheck] = opt({})


@dataclass
class PeerEvidence:
    bench: BenchRun  # CUB's own figures, taken from a lab's bench
    anchors: AnchorCheck


@dataclass
class Study:
    """A tests/tuning/*-study program: its report as it wrote it, and how it ended."""

    exit_code: int | None
    output: str
    report: dict[str, Any] = opt({})
    timed_out: bool = opt(False)


@dataclass
class MesonSuites:
    passed: list[str]
    failed: list[str]
    skipped: list[str] = field(default_factory=list)
    skip_reasons: list[str] = field(default_factory=list)


@dataclass
class MesonTest:
    name: str
    result: str
    duration: float | None
    stdout: str | None


@dataclass
class ScriptRun:
    """A repository script run by gpucheck (profile, attacks, a sandboxed batch, the class)."""

    exit_code: int | None
    seconds: float
    output: str
    command: str = opt("")
    evidence: dict[str, Any] | None = opt()  # the JSON the script wrote, verbatim
    runs: dict[str, ScriptRun] = opt({})  # profile: each of its invocations
    batches: list[ScriptRun] = opt([])  # sandbox: batches joined by --merge
    student: dict[str, Any] | None = opt()  # sandbox: the reference's result.json
    batch: dict[str, Any] | None = opt()  # sandbox: batch.json
    labs_graded: list[str] | None = opt()
    full_marks: bool | None = opt()


@dataclass
class GpuCheck:
    """`grader gpucheck`: the evidence run, or some of its parts."""

    KIND: ClassVar[str] = "gpucheck"
    machine: Machine
    schema_version: int = SCHEMA_VERSION
    kind: str = "gpucheck"
    command: str = opt("")
    parts: list[str] | None = opt()
    build: Build | None = opt()
    labs: dict[str, LabEvidence] | None = opt()
    peers: dict[str, PeerEvidence] | None = opt()
    studies: dict[str, Study] | None = opt()
    meson_suites: MesonSuites | None = opt()
    meson_log: list[MesonTest] | None = opt()
    grade_output_labs: str | None = opt()
    grade_output_solutions: str | None = opt()
    profile: ScriptRun | None = opt()
    attacks: ScriptRun | None = opt()
    sandbox: ScriptRun | None = opt()
    class_run: ScriptRun | None = field(default=None, metadata={"omit": True, "key": "class"})
    seconds: float | None = opt()


@dataclass
class BenchFile:
    """`grader bench`: every GPU lab's bench programs."""

    KIND: ClassVar[str] = "bench"
    benches: dict[str, BenchRun]
    schema_version: int = SCHEMA_VERSION
    kind: str = "bench"
    machine: Machine | None = opt()


@dataclass
class ProfileMachine:
    gpu: str
    commit: str
    ncu: str = opt("")
    commit_note: str = opt("")  # why the commit was set by hand, where it was


@dataclass
class ProfileFile:
    """`grader profile --json`: per bench name, the kernels' counters and the metrics
    grader/commands/profile.py derives (its layout is that module's)."""

    KIND: ClassVar[str] = "profile"
    machine: ProfileMachine
    log2n: int
    profiles: dict[str, dict[str, Any]]
    schema_version: int = SCHEMA_VERSION
    kind: str = "profile"


@dataclass
class Calibration:
    lab: str
    fractions: list[float]  # the lowest bandwidth fraction of each repeat
    threshold: float
    floor: float
    old_threshold: float


@dataclass
class CalibrationFile:
    """`grader calibrate --json`: the thresholds proposed for this GPU, and from what."""

    KIND: ClassVar[str] = "calibration"
    machine: Machine
    margin: float
    repeats: int
    labs: list[Calibration]
    schema_version: int = SCHEMA_VERSION
    kind: str = "calibration"


KINDS: dict[str, type] = {c.KIND: c for c in (GpuCheck, BenchFile, ProfileFile, CalibrationFile)}
