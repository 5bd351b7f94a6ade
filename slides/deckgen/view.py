"""The evidence as the decks show it: a gpucheck run (read through grader.infra.evidence,
the one schema) joined with the course file (grader.labmeta), in the course's
order, and the few words every table and plot shares."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grader import labmeta
from grader.infra import evidence
from grader.results import LabResult

from . import REPO

DEFAULT_JSON = REPO / "tests" / "gpu_runs" / "h200" / "gpucheck.json"
LABS_TOML = REPO / "grader" / "labs.toml"

CONTRACT_WORDS = {"sum": "int sum", "max": "float max", "float sum": "float sum"}
CUB_NAMES = {
    "sum": "CUB `DeviceReduce::Sum`",
    "max": "CUB `DeviceReduce::Max`",
    "float sum": "CUB `DeviceReduce::Sum` (float)",
}


@dataclass
class Point:
    """One size of a bench as a plot draws it: no figure where the lab's answer was wrong."""

    log2n: int
    n: int
    status: str
    gbps: float | None
    cub_gbps: float | None
    floor_gbps: float | None = None


@dataclass
class Bench:
    key: str  # "bench-02_interleaved", "bench-09_shuffle_vector_loads-sum"
    contract: str  # sum | max | float sum
    run: evidence.BenchRun
    sizes: list[Point]

    @property
    def label(self) -> str:  # "02_interleaved", "09_shuffle_vector_loads-sum"
        return self.key.removeprefix("bench-")

    slug = label

    @property
    def ceiling_gbps(self) -> float | None:
        return self.run.ceiling_gbps

    @property
    def theoretical_gbps(self) -> float | None:
        return self.run.theoretical_gbps

    @property
    def cub_same_process(self) -> bool:
        return self.run.cub_same_process

    def at(self, log2n: int) -> Point | None:
        return next((s for s in self.sizes if s.log2n == log2n), None)


@dataclass
class Lab:
    meta: labmeta.Lab  # labs.toml's entry
    entry: evidence.LabEvidence | None = None  # None: not in this run
    benches: list[Bench] = field(default_factory=list)

    id = property(lambda self: self.meta.id)
    title = property(lambda self: self.meta.title)
    kind = property(lambda self: self.meta.kind)
    threshold = property(lambda self: self.meta.threshold)
    floor = property(lambda self: self.meta.floor)

    @property
    def present(self) -> bool:
        return self.entry is not None

    @property
    def score(self) -> LabResult | None:
        sol = self.entry.solutions if self.entry else None
        return sol.score if sol else None

    @property
    def fraction(self) -> float | None:
        return self.score.fraction if self.score else None

    @property
    def all_cases(self) -> list[dict[str, str]]:
        """Every case's recorded properties, with its name as `_name`."""
        sol = self.entry.solutions if self.entry else None
        return [dict(c.properties, _name=c.name) for c in sol.run.cases] if sol else []

    @property
    def cases(self) -> list[dict[str, str]]:
        """The bandwidth cases (those that recorded GB/s)."""
        return [c for c in self.all_cases if "gbps" in c]

    @property
    def seed(self) -> str | None:
        sol = self.entry.solutions if self.entry else None
        return sol.run.properties.get("seed") if sol else None

    def previous(self, contract: str) -> str | None:
        return self.meta.previous(contract)

    @property
    def short(self) -> str:
        return self.meta.short or self.title

    @property
    def num(self) -> str:
        return self.id.split("_", 1)[0]

    def bench(self, contract: str) -> Bench | None:
        return next((b for b in self.benches if b.contract == contract), None)


@dataclass
class Evidence:
    path: Path
    run: evidence.GpuCheck
    course: labmeta.Course
    labs: list[Lab]
    profile: evidence.ProfileFile | None  # `grader profile --references`, beside the run

    gpu = property(lambda self: self.run.machine.gpu)
    driver = property(lambda self: self.run.machine.driver)
    memory = property(lambda self: self.run.machine.memory)
    cuda = property(lambda self: self.run.machine.cuda)

    @property
    def commit(self) -> str:
        return self.run.machine.commit[:7] or "unknown"

    @property
    def date(self) -> str:
        return self.run.machine.date[:10]

    @property
    def studies(self) -> dict[str, evidence.Study]:
        return self.run.studies or {}

    def lab(self, lab_id: str) -> Lab | None:
        return next((lab for lab in self.labs if lab.id == lab_id), None)


def _bench(key: str, run: evidence.BenchRun, kind: str) -> Bench:
    same = run.cub_same_process
    contract = run.contract or ("max" if "max" in kind else "sum")
    points = [
        Point(
            s.log2n,
            s.n,
            s.status,
            s.gbps if s.ok else None,
            s.cub_gbps if s.ok or not same else None,
            s.floor_gbps,
        )
        for s in run.sizes
    ]
    return Bench(key, contract, run, points)


def load(json_path: Path, toml_path: Path = LABS_TOML) -> Evidence:
    """The run and, beside it, profile.json where there is one (EvidenceError if
    either is not evidence this grader reads)."""
    run = evidence.load(json_path, evidence.GpuCheck)
    course = labmeta.load(Path(toml_path))
    labs = []
    for meta in course.labs:
        entry = (run.labs or {}).get(meta.id)
        lab = Lab(meta, entry)
        if entry:
            lab.benches = [_bench(k, b, meta.kind) for k, b in entry.bench.items() if b.sizes]
        lab.benches.sort(key=lambda b: (b.contract != "sum", b.key))  # the int sum first
        labs.append(lab)
    prof_path = Path(json_path).parent / "profile.json"
    profile = evidence.load(prof_path, evidence.ProfileFile) if prof_path.is_file() else None
    return Evidence(Path(json_path), run, course, labs, profile)


def as_float(x) -> float | None:
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def gb(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}"


def lab_name(lab_id: str) -> str:
    return "lab " + lab_id.split("_", 1)[0]


def rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def provenance(ev: Evidence) -> str:
    return (
        f"{ev.gpu} (driver {ev.driver}, CUDA {ev.cuda}); `{rel(ev.path)}`, "
        f"commit `{ev.commit}`, {ev.date}."
    )


def previous_bench(ev: Evidence, lab: Lab, bench: Bench) -> tuple[Lab, Bench] | None:
    prev_id = lab.previous(bench.contract)
    prev = ev.lab(prev_id) if prev_id else None
    if prev and prev.benches:  # same contract if it has one (lab 08, a max, compares with 06)
        return prev, prev.bench(bench.contract) or prev.benches[0]
    return None
