"""`python3 -m grader hint NN`: the hints of a lab, one rung at a time, and
every lab's hints.toml valid (grader/engine/hint_ladder.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grader import cli
from grader.commands import hint
from grader.engine import hint_ladder
from grader.infra.toolchain import REPO

LAB = "04_sequential_addressing"
HINT_FILES = sorted((REPO / "labs").glob("*/hints.toml"))


def toml(*kinds: str, text: str = "some words") -> str:
    return "".join(f'[[hint]]\nkind = "{k}"\ntext = """{text}"""\n\n' for k in kinds)


@pytest.mark.parametrize("path", HINT_FILES, ids=lambda p: p.parent.name)
def test_every_labs_hints_are_a_valid_ladder(path):
    hints = hint_ladder.load(path.parent)
    assert [h.kind for h in hints][:1] == ["idea"]
    assert path.read_text().startswith(f"# Hints for lab {path.parent.name[:2]}")


def test_lab_04_has_hints():
    assert (REPO / "labs" / LAB / hint_ladder.HINTS).is_file()


@pytest.mark.parametrize(
    "text, problem",
    [
        (toml("idea", "picture"), "no hint of kind structure"),
        (toml("picture", "idea", "structure"), "out of order"),
        (toml("idea", "diagram", "structure"), "kind 'diagram' is not one of"),
        (toml("idea", "picture", "structure", text="  \n"), "text is missing or empty"),
        (toml("idea", "picture", "structure") + "[[hint]]\nkind = 'idea'\n", "out of order"),
        ("[[hint]]\nkind = 'idea'\ntext = 'x'\nsecret = 1\n", "unknown key(s) secret"),
        ("hint = 3\n", "needs a list of [[hint]] tables"),
        ("[[hint]\n", "not valid TOML"),
    ],
)
def test_a_broken_ladder_is_refused_and_says_why(text, problem):
    with pytest.raises(ValueError) as e:
        hint_ladder.parse(text, "x.toml")
    assert str(e.value).startswith("x.toml: ") and problem in str(e.value), str(e.value)


def test_a_ladder_may_have_more_than_one_hint_of_a_rung():
    kinds = ["idea", "picture", "picture", "structure", "structure"]
    assert [h.kind for h in hint_ladder.parse(toml(*kinds))] == kinds


@pytest.fixture
def labs(tmp_path) -> Path:
    (tmp_path / LAB).mkdir()
    (tmp_path / LAB / "hints.toml").write_text(
        "".join(
            f'[[hint]]\nkind = "{k}"\ntext = """{k} text"""\n'
            for k in ("idea", "picture", "structure")
        )
    )
    return tmp_path


def take(labs: Path, again: bool = False) -> str:
    out: list[str] = []
    assert hint.run("04", again=again, labs_dir=labs, out=out.append) == 0
    return "\n".join(out)


def test_each_call_shows_the_next_hint_and_records_the_count(labs):
    first = take(labs)
    assert first.startswith("hint 1 of 3 (idea); 2 left: run the same command for the next")
    assert "idea text" in first
    assert (labs / LAB / ".hints-taken").read_text() == "1\n"
    second = take(labs)
    assert second.startswith("hint 2 of 3 (picture); 1 left: run the same command for it")
    assert "picture text" in second and "idea text" not in second
    assert take(labs).startswith("hint 3 of 3 (structure); none left")
    assert (labs / LAB / ".hints-taken").read_text() == "3\n"
    done = take(labs)
    assert "all 3 hints of lab 04_sequential_addressing are taken" in done
    assert (labs / LAB / ".hints-taken").read_text() == "3\n"


def test_again_shows_the_hints_taken_and_takes_none(labs):
    assert "no hint of lab 04_sequential_addressing taken yet" in take(labs, again=True)
    take(labs)
    take(labs)
    again = take(labs, again=True)
    assert "idea text" in again and "picture text" in again and "structure text" not in again
    assert again.startswith("hint 1 of 3 (idea)\n") and "left" not in again
    assert (labs / LAB / ".hints-taken").read_text() == "2\n"


@pytest.mark.parametrize("content", ["banana\n", "", "-1\n", "99\n"])
def test_a_count_that_is_no_count_or_too_large_is_read_safely(labs, content):
    (labs / LAB / ".hints-taken").write_text(content)
    shown = take(labs)
    if content == "99\n":
        assert "all 3 hints" in shown
    else:
        assert shown.startswith("hint 1 of 3")


def test_a_lab_without_hints_is_a_clear_error(tmp_path):
    (tmp_path / LAB).mkdir()
    with pytest.raises(ValueError, match="lab 04_sequential_addressing has no hints"):
        hint.run("04", labs_dir=tmp_path, out=lambda s: None)


def test_cli_unknown_lab_or_no_hints_exits_2(tmp_path, monkeypatch, capsys):
    assert cli.main(["hint", "77"]) == 2
    assert "unknown lab '77'" in capsys.readouterr().err
    monkeypatch.setattr(hint.toolchain, "REPO", tmp_path)
    (tmp_path / "labs" / LAB).mkdir(parents=True)
    assert cli.main(["hint", "04"]) == 2
    assert "has no hints" in capsys.readouterr().err


def test_cli_shows_a_hint(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(hint.toolchain, "REPO", tmp_path)
    shutil.copytree(REPO / "labs" / LAB, tmp_path / "labs" / LAB)
    (tmp_path / "labs" / LAB / ".hints-taken").unlink(missing_ok=True)
    assert cli.main(["hint", "04"]) == 0
    assert capsys.readouterr().out.startswith("hint 1 of ")
    assert cli.main(["hint", "04", "--again"]) == 0
    assert (tmp_path / "labs" / LAB / ".hints-taken").read_text() == "1\n"


def test_a_submissions_counts_are_read_without_following_links(tmp_path):
    root = tmp_path / "alice"
    for lab, content in (("01_x", "2\n"), ("02_y", "many\n"), ("03_z", None)):
        (root / "labs" / lab).mkdir(parents=True)
        if content is not None:
            (root / "labs" / lab / ".hints-taken").write_text(content)
    (root / "labs" / "04_w").mkdir()
    (root / "labs" / "04_w" / ".hints-taken").symlink_to(root / "labs" / "01_x" / ".hints-taken")
    got = hint_ladder.taken_in_submission(root, ["labs"], ["01_x", "02_y", "03_z", "04_w"])
    assert got == {"01_x": 2}
