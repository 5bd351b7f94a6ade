"""Policy checks on a student's lab files: no library reductions (CUB, Thrust,
std::accumulate ...) and no summing on the host inside the fenced regions.
The forbidden strings of each lab are data, in grader/labs.toml."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import fences
from .labmeta import Lab


@dataclass
class Violation:
    file: str
    line: int
    found: str
    why: str


def _strip_comments(code: str) -> str:
    code = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), code, flags=re.S)
    return re.sub(r"//[^\n]*", "", code)


def check(lab: Lab, lab_dir: Path) -> list[Violation]:
    found = []
    for name in lab.files:
        path = lab_dir / name
        if not path.exists():
            found.append(Violation(name, 0, "", "the file is missing"))
            continue
        try:
            regions = fences.extract(path.read_text(errors="replace"), name)
        except fences.FenceError as e:
            found.append(Violation(name, 0, "", f"broken fence markers: {e}"))
            continue
        for region in regions:
            code = _strip_comments(region.body)
            for offset, line in enumerate(code.splitlines()):
                for banned in lab.forbidden:
                    if banned in line:
                        found.append(Violation(
                            name, region.first_line + offset, banned,
                            f"'{banned}' is not allowed in this lab: the point is to write the "
                            "reduction yourself, on the GPU"))
    return found
