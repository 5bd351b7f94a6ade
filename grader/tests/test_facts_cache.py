"""The instructor's files are compiled for the policy check once a batch: its
workers share one facts cache (engine/policy/facts_cache.py), one of them compiles
an entry while the others wait for it, and an entry made in one worker's
tree is right for every other tree."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest

from grader import labmeta
from grader.engine.policy import build_flags, facts_cache, policy, symbols
from grader.infra import toolchain
from grader.results import LabResult
from grader.status import LabStatus

REPO = toolchain.REPO
NO_TOOLS = symbols.Toolchain(None, None, None, None)


def compiled(source: Path, facts: int = 1) -> symbols.Compiled:
    made = [symbols.Fact("host-symbol", f"f{k}", "undefined", 0) for k in range(facts)]
    return symbols.Compiled(str(source), True, "", 0.1, made)


def call(source: Path, work: Path, **kw) -> symbols.Compiled:
    return facts_cache.cached_facts(
        source,
        include_dirs=[],
        rdc=False,
        work=work,
        timeout=60,
        instructions=(),
        tools=kw.pop("tools", NO_TOOLS),
        **kw,
    )


@pytest.fixture
def counted(monkeypatch):
    """compile_facts replaced by a slow stand-in that counts its calls."""
    calls: list[Path] = []
    lock = threading.Lock()

    def slow(source: Path, **_kw) -> symbols.Compiled:
        with lock:
            calls.append(source)
        time.sleep(0.3)
        return compiled(source, facts=3)

    monkeypatch.setattr(facts_cache, "compile_facts", slow)
    return calls


def test_one_worker_compiles_an_entry_and_the_others_wait_for_it(tmp_path, counted):
    source = tmp_path / "reduce.cu"
    source.write_text("// the skeleton\n")
    work = tmp_path / "policy"
    got: list[symbols.Compiled] = []
    workers = [threading.Thread(target=lambda: got.append(call(source, work))) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(counted) == 1, "every worker compiled the file: nothing waited for the first"
    assert len(got) == 8 and all(g.ok and len(g.facts) == 3 for g in got)
    assert call(source, work).facts == got[0].facts and len(counted) == 1  # read, not compiled


def test_another_file_or_a_changed_one_is_compiled_again(tmp_path, counted):
    work = tmp_path / "policy"
    first, second = tmp_path / "a" / "reduce.cu", tmp_path / "b" / "reduce.cu"
    for f, text in ((first, "// one\n"), (second, "// two\n")):
        f.parent.mkdir()
        f.write_text(text)
    call(first, work)
    call(second, work)
    assert len(counted) == 2
    second.write_text("// one\n")  # the same name and content: the same entry
    call(second, work)
    assert len(counted) == 2


def test_a_failed_or_damaged_entry_is_never_read(tmp_path, monkeypatch):
    source = tmp_path / "reduce.cu"
    source.write_text("// the reference\n")
    work = tmp_path / "policy"
    results = [symbols.Compiled(str(source), False, "busy machine"), compiled(source)]
    monkeypatch.setattr(facts_cache, "compile_facts", lambda s, **_kw: results.pop(0))
    assert not call(source, work).ok  # not kept: the next call compiles again
    assert call(source, work).ok and not results
    (entry,) = (work / "facts-cache").glob("*.json")
    entry.write_text("{not json")
    monkeypatch.setattr(facts_cache, "compile_facts", lambda s, **_kw: compiled(s, facts=2))
    assert len(call(source, work).facts) == 2  # damaged: compiled again and rewritten
    assert len(json.loads(entry.read_text())["facts"]) == 2


def tree_like(tree: Path, lab: str) -> build_flags.BuildCompile:
    """The labs/ runner's compile of `lab` in a worker's tree, spelled as meson
    writes it into that tree's compile_commands.json."""
    build = tree / "build"
    kept = build / "tests" / f"{lab}-runner-labs.p"
    kept.mkdir(parents=True)
    obj = f"tests/{lab}-runner-labs.p/reduce.cu.o"
    command = (
        f"nvcc -DNDEBUG -I{kept.relative_to(build)} --std=c++17 -O3 -arch=sm_90 -lineinfo "
        f"-I../common -Icommon -Xcompiler=-fno-inline,-g1 -keep -keep-dir {kept} "
        f"-U__NO_INLINE__ -MD -MT {obj} -MF {obj}.d -o {obj} -c ../labs/{lab}/reduce.cu"
    )
    entry = {"directory": str(build), "command": command, "file": f"../labs/{lab}/reduce.cu"}
    entry["output"] = obj
    (build / "compile_commands.json").write_text(json.dumps([entry]))
    like = build_flags.for_file(build, f"{lab}-runner-labs", "reduce.cu")
    assert like is not None and like.kept == kept
    return like


@pytest.mark.skipif(
    symbols.Toolchain.find().missing_for(Path("x.cu")) != [], reason="needs nvcc and binutils"
)
def test_an_entry_made_in_one_workers_tree_is_what_another_tree_compiles(tmp_path, monkeypatch):
    """Lab 07's reference in two workers' trees (lab_policy.reference_file
    finds it in the worker's own copy): one key, and the facts of the first
    tree's compile equal the second tree's own. (A baseline is never the
    file the build compiles: that is the student's.)"""
    lab = "07_atomic_finish"
    trees = [tmp_path / "workers" / "w0" / "src", tmp_path / "workers" / "w13" / "src"]
    for tree in trees:
        shutil.copytree(REPO / "common", tree / "common")
        shutil.copytree(REPO / "labs" / lab, tree / "labs" / lab)
        shutil.copytree(REPO / "solutions" / lab, tree / "solutions" / lab)
    likes = [tree_like(tree, lab) for tree in trees]
    real = facts_cache.compile_facts
    compiles: list[Path] = []

    def counting(source: Path, **kw) -> symbols.Compiled:
        compiles.append(source)
        return real(source, **kw)

    monkeypatch.setattr(facts_cache, "compile_facts", counting)
    tools = symbols.Toolchain.find()
    instructions = policy.instruction_patterns(policy.categories_for(labmeta.load().lab(lab)))
    shared = tmp_path / "workers" / "policy"

    def facts(tree: Path, like, work: Path) -> symbols.Compiled:
        return facts_cache.cached_facts(
            tree / "solutions" / lab / "reduce.cu",
            include_dirs=[tree / "common"],
            rdc=False,
            work=work,
            timeout=300,
            instructions=instructions,
            tools=tools,
            like=like,
        )

    first = facts(trees[0], likes[0], shared)
    assert first.ok and first.complete, first.log[-2000:]
    again = facts(trees[1], likes[1], shared)
    assert len(compiles) == 1, "the second tree's key differs: each worker would compile"
    own = facts(trees[1], likes[1], tmp_path / "own")
    assert len(compiles) == 2 and own.ok and own.complete
    assert {f.key for f in again.facts} == {f.key for f in own.facts}
    assert not any(str(trees[0]) in repr(f.key) for f in again.facts)


def test_the_workers_of_one_batch_grade_with_one_policy_folder(tmp_path, monkeypatch):
    """What the preflight compiled is there for every worker's first student."""
    from test_batch import LAB01
    from test_batch_faults import config

    from grader.batch import worker as batch_worker
    from grader.engine import lab_grading

    seen: list[Path] = []
    monkeypatch.setattr(
        lab_grading,
        "grade_lab",
        lambda *a, **kw: (
            seen.append(kw["options"].policy_work) or LabResult(LAB01.id, "", LabStatus.GRADED)
        ),
    )
    cfg = config(tmp_path)
    for k in (0, 13):
        worker = batch_worker.Worker(tmp_path / "out" / "workers" / f"w{k}", None, cfg)
        worker._grade_lab(LAB01, None)
    assert len(seen) == 2 and seen[0] == seen[1]
    assert not seen[0].is_relative_to(tmp_path / "out" / "workers" / "w0")


def test_the_preflights_early_compiles_are_the_entries_the_checks_read(tmp_path, monkeypatch):
    """lab_policy.baseline_compiles (the preflight's, all labs at once) makes
    the very entries the linked check then reads: the check compiles only
    the student's file."""
    from grader.engine.policy import lab_policy

    lab = labmeta.load().lab("07_atomic_finish")
    tree = tmp_path / "workers" / "w0" / "src"
    shutil.copytree(REPO / "common", tree / "common")
    shutil.copytree(REPO / "labs" / lab.id, tree / "labs" / lab.id)
    tree_like(tree, lab.id)
    baselines: list[Path] = []
    students: list[Path] = []
    monkeypatch.setattr(
        facts_cache, "compile_facts", lambda s, **_kw: baselines.append(s) or compiled(s)
    )
    monkeypatch.setattr(
        symbols, "compile_facts", lambda s, **_kw: students.append(s) or compiled(s)
    )
    work, target = tmp_path / "workers" / "policy", f"{lab.id}-runner-labs"
    calls = lab_policy.baseline_compiles(lab, tree, work, tree / "build", target)
    for c in calls:
        c()
    assert len(calls) == 2 and sorted(p.parent.parent.name for p in baselines) == [
        "labs",
        "solutions",
    ]
    student = tmp_path / "student"  # not the file the build compiles: compiled, not read
    shutil.copytree(REPO / "solutions" / lab.id, student)
    found = lab_policy.linked_violations(lab, student, tree, work, tree / "build", target)
    assert found == [] and students == [student / "reduce.cu"]
    assert len(baselines) == 2, "the check compiled an instructor's file again: another key"
