"""`calibrate`: thresholds for this GPU from the reference solutions.

Runs every lab's bandwidth test against its reference solution, several
times, and proposes threshold = margin x the lowest fraction of the copy
ceiling measured (default margin 0.85), floor = threshold / 2. With --write
the thresholds go into grader/labs.toml, for the instructor to commit as the
course GPU's.

Writing edits the file in place, value by value: `threshold` and `floor` of
each calibrated lab's [labs.<id>] table and `gpu` of [course], keeping every
other line (comments included) byte for byte. Not tomlkit, which would keep
comments too: the grading machine has the standard library only and nothing
can be installed there, and tomllib only reads. So the edit is checked instead:
the edited text is parsed again and must validate (labmeta's schema) and equal
the old data with exactly those values changed, and differ from the old text
only on those lines, before it replaces the file (a temporary file in the same
folder, then os.replace: a reader sees the old file or the new, never half)."""

from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path

from .. import labmeta
from ..infra import evidence
from ..engine.checker_run import CheckerOptions, run_checker
from ..engine.scoring import bandwidth_figures, is_performance
from ..infra.evidence import Calibration, CalibrationFile
from ..infra import isolation, log
from ..infra import toolchain as tools
from ..infra.atomic import write_atomic

__all__ = ["Calibration", "edit", "measure", "run", "write"]


def measure(
    build_dir: Path, repeats: int = 3, margin: float = 0.85, progress=log.progress
) -> list[Calibration]:
    course = labmeta.load()
    out = []
    for lab in course.labs:
        if lab.spans_gpus:
            continue  # lab 12: calibrated on a machine of 2+ GPUs (tests/gpu_runs/lab12_gpu.sh)
        runner = f"{lab.id}-runner-solutions"
        checker = f"checker-{lab.kind}"
        if not tools.build(build_dir, [runner, checker]).ok:
            raise tools.SetupError(f"{lab.id}: the reference solution does not build")
        fractions = []
        for _ in range(repeats):
            # Measured through the same checker and runner path as a student's code.
            iso = isolation.contained()
            try:
                run = run_checker(
                    build_dir / "tests" / checker,
                    lab.id,
                    iso.runner(build_dir / "tests" / runner),
                    CheckerOptions(impl="solutions", gtest_filter="*Bandwidth*", timeout=600),
                )
            finally:
                iso.cleanup()
            if run.status == "skipped":
                progress(f"[calibrate] {lab.id}: skipped ({run.reason})")
                break
            # A lab with two bandwidth tests (sum and max) is as fast as its slowest.
            per_run = [
                f["fraction"]
                for c in run.cases
                if is_performance(c)
                for f in bandwidth_figures(c)
                if f["graded"] and f["fraction"]
            ]
            if per_run:
                fractions.append(min(per_run))
        if fractions:
            threshold = round(margin * min(fractions), 3)
            out.append(
                Calibration(lab.id, fractions, threshold, round(threshold / 2, 3), lab.threshold)
            )
            progress(
                f"[calibrate] {lab.id}: fractions {', '.join(f'{f:.3f}' for f in fractions)}"
                f" -> threshold {threshold} (was {lab.threshold})"
            )
    return out


# A table header, [a.b] (or [[a.b]]), with an optional comment after it.
_HEADER = re.compile(r"\s*\[\[?(?P<name>[^\[\]#]+)\]\]?\s*(#.*)?")
# key = value [# comment], the value a number or a one-line string.
_NUMBER = r"[-+]?[0-9][0-9_]*(?:\.[0-9_]+)?(?:[eE][-+]?[0-9_]+)?|[-+]?(?:inf|nan)"
_STRING = r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\''


def _lines(text: str) -> list[str]:
    """The lines of text, each with its end (only \\n ends a line in TOML; \\r\\n stays)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _table_path(line: str) -> tuple[str, ...] | None:
    """The key path of a table header line ([labs."01_x"] -> ("labs", "01_x")), else None."""
    m = _HEADER.fullmatch(line.rstrip("\r\n"))
    if m is None:
        return None
    try:
        data = tomllib.loads(f"[{m.group('name')}]")
    except tomllib.TOMLDecodeError:
        return None
    path = []
    while isinstance(data, dict) and len(data) == 1:
        key, data = next(iter(data.items()))
        path.append(key)
    return tuple(path)


def _toml_value(value: str | float) -> str:
    if isinstance(value, str):
        out = "".join(
            '\\"'
            if ch == '"'
            else "\\\\"
            if ch == "\\"
            else f"\\u{ord(ch):04x}"
            if ord(ch) < 0x20 or ord(ch) == 0x7F
            else ch
            for ch in value
        )
        return f'"{out}"'
    return repr(float(value))  # a float, as TOML writes it (0.49, 1.0, nan)


def _set_value(
    lines: list[str], table: tuple[str, ...], key: str, value: str | float, path: Path
) -> int:
    """Replaces the value of `key = ...` inside [table] in place (what follows the value,
    a comment included, stays); returns the line's index."""
    current = None
    found = []
    k = re.escape(key)
    line_re = re.compile(
        rf"(?P<head>\s*(?:{k}|\"{k}\"|'{k}')\s*=\s*)"
        rf"(?P<value>{_NUMBER}|{_STRING})(?P<tail>\s*(?:#.*)?)"
    )
    for i, line in enumerate(lines):
        name = _table_path(line)
        if name is not None:
            current = name
            continue
        if current == table:
            body = line.rstrip("\r\n")
            m = line_re.fullmatch(body)
            if m is not None:
                found.append((i, m, line[len(body) :]))
    where = "[" + ".".join(table) + "]"
    if len(found) != 1:
        raise labmeta.CourseFileError(
            path,
            [
                f"{where} {key}: calibrate found {len(found)} lines `{key} = <value>` in this "
                "table, not one: edit the file by hand"
            ],
        )
    i, m, eol = found[0]
    lines[i] = m.group("head") + _toml_value(value) + m.group("tail") + eol
    return i


def edit(
    text: str, calibrations: list[Calibration], gpu: str, path: Path = labmeta.LABS_TOML
) -> str:
    """The course file's text with each calibration's threshold and floor, and [course]
    gpu, changed and nothing else. Raises labmeta.CourseFileError if the text is not a
    valid course file, before or after, or if anything else would change."""
    old = labmeta.parse(text, path)
    expected = copy.deepcopy(old)
    changes: list[tuple[tuple[str, ...], str, str | float]] = [(("course",), "gpu", gpu)]
    for c in calibrations:
        if c.lab not in old["labs"]:
            raise labmeta.CourseFileError(path, [f"[labs.{c.lab}]: no such lab to calibrate"])
        changes += [
            (("labs", c.lab), "threshold", float(c.threshold)),
            (("labs", c.lab), "floor", float(c.floor)),
        ]
    lines = _lines(text)
    edited = set()
    for table, key, value in changes:
        edited.add(_set_value(lines, table, key, value, path))
        entry = expected
        for part in table:
            entry = entry[part]
        entry[key] = value
    new_text = "".join(lines)
    new = labmeta.parse(new_text, path)  # still valid: CourseFileError if not
    before, after = _lines(text), _lines(new_text)
    stray = [
        str(n + 1) for n, (a, b) in enumerate(zip(before, after)) if a != b and n not in edited
    ]
    if len(before) != len(after):
        stray.append("the number of lines")
    if new != expected:
        stray.append("the parsed data")
    if stray:
        raise labmeta.CourseFileError(
            path,
            [
                "calibrate's edit would change more than threshold, floor and gpu (it changes "
                f"{', '.join(stray)}): nothing written; edit the file by hand"
            ],
        )
    return new_text


def write(calibrations: list[Calibration], gpu: str, path: Path = labmeta.LABS_TOML) -> None:
    """Writes the calibrations into the course file (see the module's docstring); the
    file is left as it was if anything is wrong."""
    path = Path(path)
    text = edit(path.read_bytes().decode("utf-8"), calibrations, gpu, path)
    write_atomic(path, text, keep_mode=True)


def run(
    build_dir: Path,
    arch: str,
    repeats: int,
    margin: float,
    do_write: bool,
    json_path: Path | None = None,
) -> int:
    """Measures, prints, writes the figures as evidence (JSON_PATH, default
    BUILD_DIR/calibration.json) and, with do_write, the thresholds into labs.toml."""
    from ..infra.gpus import visible_gpus
    from .gpucheck import machine

    if not visible_gpus():
        print("calibrate needs the course GPU (nvidia-smi lists none here): nothing measured")
        return 4
    tools.configure(build_dir, [f"-Dgpu_arch={arch}"])
    cals = measure(build_dir, repeats, margin)
    here = machine()
    gpu = here.gpu
    json_path = json_path or build_dir / "calibration.json"
    evidence.dump(CalibrationFile(here, margin, repeats, cals), json_path)
    print(f"[calibrate] the figures: {json_path}")
    print(f"\n{'lab':28} {'measured (min)':>14} {'threshold':>9} {'floor':>6} {'was':>6}")
    for c in cals:
        print(
            f"{c.lab:28} {min(c.fractions):>14.3f} {c.threshold:>9} {c.floor:>6} "
            f"{c.old_threshold:>6}"
        )
    if do_write:
        write(cals, gpu)
        print(f"\nwrote {labmeta.LABS_TOML} for {gpu}: review and commit it")
    else:
        print("\n(not written: add --write to update grader/labs.toml)")
    return 0
