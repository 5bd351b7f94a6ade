"""A handout asks; the deck's debrief answers (decision 3 of the course's texts).

- No handout (labs/*/README.md), answers sheet, hints file or skeleton comment
  holds a measured figure: GB/s, a fraction of the copy (0.211, 0.2x, "a fifth
  of the copy"), a percentage faster or slower, a counter's value, a GPU time,
  a count of tests. Measured figures live in the decks' generated debrief,
  which follows the committed evidence (slides/test_slides.py); a handout that
  quoted them would answer its own questions, and drift from the evidence.
  A lab's threshold and floor are its contract, not a measurement: allowed.
- Every `Prediction (KEY)` a handout asks for names a key the grader knows
  (grader/engine/predictions.py), and the lab's ANSWERS.md holds its line,
  empty, for the student to fill before measuring.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader import labmeta
from grader.engine.policy import fence_statements
from grader.engine import predictions
from grader.infra.toolchain import REPO

COURSE = labmeta.load()
# The contract's own fractions: a handout states them.
CONTRACT = {f"{v:g}" for lab in COURSE.labs for v in (lab.threshold, lab.floor)}

FIGURES = [
    ("bandwidth", r"(?<!lab )(?<![\w.,])\d[\d,.]*\s*(?:GB/s|GiB/s|TB/s)"),
    ("a multiple of the copy", r"(?<![\w.])\d+\.\d+\s*x\b"),
    ("a fraction of the copy", r"(?<![\w.^])0\.\d+(?=\s*(?:of|x)\b)"),
    ("a fraction", r"(?<![\w.^])0\.\d{2,}\b"),
    (
        "a measured percentage",
        r"\d+(?:\.\d+)?\s*%\s*(?:faster|slower|more|less|fewer|higher|lower|of\b)",
    ),
    (
        "a counter's value",
        r"\d[\d,.]*\s+(?:(?:shared-memory\s+)?bank\s+conflicts|atomic\s+instructions|"
        r"warp\s+instructions\s+per|bytes\s+per\s+(?:load|request)|warps?\s+(?:active|waiting))",
    ),
    ("a GPU time", r"(?<!lab )(?<![\w.,])\d[\d,.]*\s*(?:us|µs|μs)\b"),
    ("a count of tests", r"\b\d{2,}\s+(?:tests|test cases)\b"),
    (
        "a fraction in words",
        r"\b(?:a|one|two|three)\s+(?:fifth|quarter|third|tenth)s?\s+of\s+"
        r"(?:the\s+|what\s+the\s+)?(?:copy|ceiling|peak|bandwidth|memory)",
    ),
]
FIGURE_RE = [(what, re.compile(pattern, re.I)) for what, pattern in FIGURES]


def figures(text: str) -> list[tuple[str, str]]:
    """(what, the figure) for every measured figure in a text; a lab's
    threshold or floor is not one."""
    found, seen = [], set()
    for what, pattern in FIGURE_RE:
        for m in pattern.finditer(text):
            if (what == "a fraction" and m.group(0) in CONTRACT) or m.start() in seen:
                continue
            seen.update(range(*m.span()))
            found.append((what, m.group(0)))
    return found


def texts() -> list[Path]:
    labs = REPO / "labs"
    found = [
        *labs.glob("*/README.md"),
        *labs.glob("*/ANSWERS.md"),
        *labs.glob("*/hints.toml"),
        *(p for p in labs.glob("*/*") if p.suffix in fence_statements.SOURCE_SUFFIXES),
    ]
    return sorted(found)


def student_text(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    if path.suffix in fence_statements.SOURCE_SUFFIXES:
        return "\n".join(fence_statements.comments(text))
    return text


@pytest.mark.parametrize("path", texts(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_measured_figure_in_a_handout_or_skeleton(path):
    found = figures(student_text(path))
    assert not found, (
        f"{path.relative_to(REPO)} states measured figures (they belong in the deck's "
        "debrief, generated from the evidence; ask for a prediction instead):\n"
        + "\n".join(f"  {what}: {figure!r}" for what, figure in found)
    )


@pytest.mark.parametrize(
    "text",
    [
        "the reference reaches 871 GB/s",
        "0.204 of the 4,262 copy",
        "at 0.2x the copy",
        "lab 09 is 1.07x CUB",
        "0.2 of the copy",
        "12% faster than lab 04",
        "94% of the anchors",
        "0 bank conflicts",
        "512 bytes per load",
        "one call takes 150 us",
        "all 276 tests pass",
        "about a fifth of the copy",
        "a third of what the memory can do",
    ],
)
def test_a_measured_figure_is_seen(text):
    assert figures(text), text


@pytest.mark.parametrize(
    "text",
    [
        f"The threshold is **{COURSE.labs[3].threshold:g}** of that copy",
        "2^27 ints, at least 8x the L2",
        "slower than lab 02, and why",
        "thread t < s adds partial[t + s]",
        "n = 2^32 + 2^20 + 7 elements",
        "04_sequential_addressing   1/72     -          -        16%    0/10",
        "half of the threads idle",
        "| lab 04 GB/s | lab 10 µs |",
    ],
)
def test_a_contract_or_a_word_is_not_a_figure(text):
    assert not figures(text), text


# -- predictions -----------------------------------------------------------------------

ASKED = re.compile(r"Prediction \((?P<key>[^)\n]*)\)")


def lab_dirs() -> list[Path]:
    return [REPO / "labs" / lab.id for lab in COURSE.labs]


def prediction_problems(name: str, handout: str, answers: str) -> list[str]:
    """What is wrong with the keys a handout asks for and its ANSWERS.md's lines."""
    asked = {m["key"] for m in ASKED.finditer(handout)}
    lines = {m["key"] for m in predictions.LINE.finditer(answers)}
    return [
        f"{name}/README.md asks for {key!r}, no key the grader knows "
        f"({', '.join(predictions.KEYS)})"
        for key in sorted(asked - set(predictions.KEYS))
    ] + [
        f"{name}/ANSWERS.md has no line `Prediction ({key}): ` that its handout asks for"
        for key in sorted(asked - lines)
    ]


@pytest.mark.parametrize("lab_dir", lab_dirs(), ids=lambda p: p.name)
def test_each_prediction_asked_is_a_known_key_with_a_line_in_answers(lab_dir):
    answers = lab_dir / predictions.ANSWERS
    problems = prediction_problems(
        lab_dir.name,
        (lab_dir / "README.md").read_text(),
        answers.read_text() if answers.is_file() else "",
    )
    assert not problems, "\n".join(problems)


def test_a_key_unknown_or_without_its_line_is_seen():
    handout = "Write it as Prediction (gbps) and Prediction (speed).\n"
    assert len(prediction_problems("x", handout, "Prediction (gbps): \n")) == 2
    assert prediction_problems("x", "Prediction (gbps)", "Prediction (gbps):\n") == []
    assert prediction_problems("x", "Prediction (gbps)", "")


@pytest.mark.parametrize("lab_dir", lab_dirs(), ids=lambda p: p.name)
def test_a_predict_then_measure_section_asks_for_a_key(lab_dir):
    handout = (lab_dir / "README.md").read_text()
    section = re.search(r"^#+ Predict, then measure\n(.*?)(?=^#+ |\Z)", handout, re.S | re.M)
    if section is None:
        pytest.skip(f"{lab_dir.name}/README.md has no 'Predict, then measure' section")
    assert ASKED.search(section.group(1)), (
        f"{lab_dir.name}/README.md: 'Predict, then measure' names no `Prediction (KEY)` "
        f"for ANSWERS.md (keys: {', '.join(predictions.KEYS)})"
    )


@pytest.mark.parametrize("lab_dir", lab_dirs(), ids=lambda p: p.name)
def test_the_skeletons_answers_predict_nothing(lab_dir):
    path = lab_dir / predictions.ANSWERS
    if not path.is_file():
        pytest.skip(f"{lab_dir.name} has no ANSWERS.md")
    said = predictions.parse(path.read_text())
    assert not said.values and not said.notes, (
        f"{lab_dir.name}/ANSWERS.md: the student fills the predictions, not the skeleton: "
        f"{said.values or said.notes}"
    )
    keys = {m["key"] for m in predictions.LINE.finditer(path.read_text())}
    assert keys <= set(predictions.KEYS), sorted(keys - set(predictions.KEYS))
