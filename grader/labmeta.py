"""Lab metadata (grader/labs.toml) as typed data, and the C++ header the tests use.

Run as a script (meson does, at configure and build time):
  python3 grader/labmeta.py header LABS_TOML OUT_H   the C++ header the tests include
  python3 grader/labmeta.py list LABS_TOML           the labs and their sources, for meson
"""

from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

LABS_TOML = Path(__file__).resolve().parent / "labs.toml"
if not __package__:  # meson runs this file as a plain script: make `grader` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from grader.course_schema import KINDS, PROFILE_METRICS, TREE_SHAPES  # noqa: E402,F401
from grader.course_schema import problems as schema_problems  # noqa: E402


@dataclass(frozen=True)
class Lab:
    id: str
    title: str
    kind: str
    files: tuple[str, ...]
    points_correctness: int
    points_performance: int
    threshold: float
    floor: float
    forbidden: tuple[str, ...] = field(default_factory=tuple)
    anchor_gbps: dict[int, float] = field(default_factory=dict)  # H200, by log2(n)
    beats_cub: bool = False  # the reference must match or beat CUB at every size
    rdc: bool = False  # relocatable device code (dynamic parallelism)
    profile: tuple[str, ...] = ()  # what `grader profile` shows beside the common rows
    short: str = ""  # a name for plot legends ("grid-stride")
    # The earlier lab each contract is compared with ("" for a lab of one
    # contract; "sum" and "max" for lab 09): decks, plots, speed-up tables.
    builds_on: dict[str, str] = field(default_factory=dict)
    tree: str = ""  # the in-block tree's shape (labs 02-04): decks' diagrams
    min_gpus: int = 1  # GPUs one run of its tests needs (lab 12: 2, an all-reduce across GPUs)

    def previous(self, contract: str = "") -> str | None:
        return self.builds_on.get(contract) or self.builds_on.get("")

    @property
    def points(self) -> int:
        return self.points_correctness + self.points_performance

    @property
    def needs_gpu(self) -> bool:
        return self.kind != "cpu_sum"

    @property
    def spans_gpus(self) -> bool:
        """Whether one call spans several GPUs (lab 12's all-reduce): graded on a
        machine of min_gpus or more; its bench, calibration and GPU evidence are
        its own (tests/gpu_runs/lab12_gpu.sh), not the one-GPU labs' routines."""
        return self.min_gpus > 1


@dataclass(frozen=True)
class Peer:
    id: str
    title: str
    anchor_gbps: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Course:
    gpu: str
    labs: tuple[Lab, ...]
    peers: tuple[Peer, ...] = ()
    # Device-to-device copy ceilings (GB/s) measured on each GPU model the course
    # grades on: a batch on that model must measure within 15% of it.
    ceilings: dict[str, float] = field(default_factory=dict)

    def lab(self, lab_id: str) -> Lab:
        for lab in self.labs:
            if lab.id == lab_id or lab.id.split("_", 1)[0] == lab_id:
                return lab
        known = ", ".join(lab.id for lab in self.labs)
        raise KeyError(f"unknown lab {lab_id!r}; the labs are: {known}")


class CourseFileError(Exception):
    """labs.toml does not fit the schema: every problem found, each naming its table
    and key. The CLI prints it as `error: ...` and exits 2. Not a ValueError: code
    that takes a ValueError for a student's bad submission must never take the
    instructor's broken course file for one."""

    def __init__(self, path: Path | str, problems: list[str]):
        self.path = Path(path)
        self.problems = list(problems)
        n = len(self.problems)
        super().__init__(
            f"{path}: {n} problem{'s' if n != 1 else ''} in the course file:\n"
            + "\n".join(f"  {p}" for p in self.problems)
        )


def validate(data: dict, path: Path | str = LABS_TOML) -> None:
    """Checks parsed labs.toml against the schema; raises CourseFileError listing every
    problem (unknown tables or keys, wrong types, values out of range)."""
    found = schema_problems(data)
    if found:
        raise CourseFileError(path, found)


def parse(text: str, path: Path | str = LABS_TOML) -> dict:
    """The TOML text, parsed and validated (CourseFileError if it is not valid)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise CourseFileError(path, [f"not valid TOML: {e}"]) from None
    validate(data, path)
    return data


def load(path: Path = LABS_TOML) -> Course:
    """The course of a labs.toml, validated first: CourseFileError lists what is wrong."""
    path = Path(path)
    data = parse(path.read_bytes().decode("utf-8"), path)
    labs = tuple(
        Lab(
            id=lab_id,
            title=entry["title"],
            kind=entry["kind"],
            files=tuple(entry["files"]),
            points_correctness=entry["points_correctness"],
            points_performance=entry["points_performance"],
            threshold=float(entry["threshold"]),
            floor=float(entry["floor"]),
            forbidden=tuple(entry.get("forbidden", ())),
            anchor_gbps=_anchor_map(entry),
            beats_cub=entry.get("beats_cub", False),
            rdc=entry.get("rdc", False),
            profile=tuple(entry.get("profile", ())),
            short=entry.get("short", ""),
            builds_on=_builds_on_map(entry.get("builds_on")),
            tree=entry.get("tree", ""),
            min_gpus=entry.get("min_gpus", 1),
        )
        for lab_id, entry in data["labs"].items()
    )
    peers = tuple(
        Peer(id=pid, title=p.get("title", pid), anchor_gbps=_anchor_map(p))
        for pid, p in data.get("peers", {}).items()
    )
    ceilings = {str(k): float(v) for k, v in data.get("ceilings", {}).items()}
    return Course(gpu=data["course"]["gpu"], labs=labs, peers=peers, ceilings=ceilings)


def _builds_on_map(v) -> dict[str, str]:
    return {"": v} if isinstance(v, str) else dict(v or {})


def _anchor_map(entry: dict) -> dict[int, float]:
    return {int(k): float(v) for k, v in entry.get("anchor_gbps", {}).items()}


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def header(course: Course) -> str:
    rows = "\n".join(
        f"    {{{_c_string(lab.id)}, {_c_string(lab.title)}, {_c_string(lab.kind)}, "
        f"{lab.threshold!r}, {lab.floor!r}}},"
        for lab in course.labs
    )
    return f"""// Generated from grader/labs.toml by grader/labmeta.py: do not edit.
#pragma once

namespace lab {{

struct LabMeta {{
  const char* id;
  const char* title;
  const char* kind;
  double threshold;  // fraction of the in-process copy ceiling
  double floor;
}};

inline constexpr LabMeta kLabMeta[] = {{
{rows}
}};

inline constexpr const char* kCourseGpu = {_c_string(course.gpu)};

}}  // namespace lab
"""


def build_list(course: Course) -> str:
    """One line per lab for meson.build: id, kind, comma-separated sources, rdc or -."""
    return "".join(
        f"{lab.id} {lab.kind} {','.join(lab.files)} {'rdc' if lab.rdc else '-'}\n"
        for lab in course.labs
    )


def main(argv: list[str]) -> int:
    try:
        return _main(argv)
    except CourseFileError as e:
        print(f"labmeta.py: {e}", file=sys.stderr)
        return 1


def _main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[1] == "header":
        text = header(load(Path(argv[2])))
        out = Path(argv[3])
        if not out.exists() or out.read_text() != text:
            out.write_text(text)
        return 0
    if len(argv) == 3 and argv[1] == "list":
        sys.stdout.write(build_list(load(Path(argv[2]))))
        return 0
    print("usage: labmeta.py header LABS_TOML OUT_H | labmeta.py list LABS_TOML", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
