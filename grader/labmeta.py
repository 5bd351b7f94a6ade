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
KINDS = ("cpu_sum", "gpu_sum", "gpu_max", "gpu_sum_max", "gpu_float_sum")


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
    anchor_gbps: dict[int, float] = field(default_factory=dict)   # H200, by log2(n)
    beats_cub: bool = False     # the reference must match or beat CUB at every size
    rdc: bool = False           # relocatable device code (dynamic parallelism)

    @property
    def points(self) -> int:
        return self.points_correctness + self.points_performance

    @property
    def needs_gpu(self) -> bool:
        return self.kind != "cpu_sum"


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


def load(path: Path = LABS_TOML) -> Course:
    with open(path, "rb") as f:
        data = tomllib.load(f)
    labs = []
    for lab_id, entry in data.get("labs", {}).items():
        try:
            lab = Lab(id=lab_id, title=entry["title"], kind=entry["kind"],
                      files=tuple(entry["files"]),
                      points_correctness=int(entry["points_correctness"]),
                      points_performance=int(entry["points_performance"]),
                      threshold=float(entry["threshold"]), floor=float(entry["floor"]),
                      forbidden=tuple(entry.get("forbidden", ())),
                      anchor_gbps=_anchors(entry),
                      beats_cub=bool(entry.get("beats_cub", False)),
                      rdc=bool(entry.get("rdc", False)))
        except KeyError as missing:
            raise ValueError(f"{path}: lab {lab_id} lacks {missing}") from None
        if lab.kind not in KINDS:
            raise ValueError(f"{path}: lab {lab_id} has unknown kind {lab.kind!r}")
        if not 0 <= lab.floor <= lab.threshold:
            raise ValueError(f"{path}: lab {lab_id} needs 0 <= floor <= threshold")
        labs.append(lab)
    peers = tuple(Peer(id=pid, title=p.get("title", pid), anchor_gbps=_anchors(p))
                  for pid, p in data.get("peers", {}).items())
    ceilings = {str(k): float(v) for k, v in data.get("ceilings", {}).items()}
    return Course(gpu=data.get("course", {}).get("gpu", ""), labs=tuple(labs), peers=peers,
                  ceilings=ceilings)


def _anchors(entry: dict) -> dict[int, float]:
    return {int(k): float(v) for k, v in entry.get("anchor_gbps", {}).items()}


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def header(course: Course) -> str:
    rows = "\n".join(
        f"    {{{_c_string(lab.id)}, {_c_string(lab.title)}, {_c_string(lab.kind)}, "
        f"{lab.threshold!r}, {lab.floor!r}}},"
        for lab in course.labs)
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
    return "".join(f"{lab.id} {lab.kind} {','.join(lab.files)} {'rdc' if lab.rdc else '-'}\n"
                   for lab in course.labs)


def main(argv: list[str]) -> int:
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
