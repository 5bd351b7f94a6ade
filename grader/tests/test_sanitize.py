"""grader/engine/sanitize.py: which runs make each case's first call only."""

from pathlib import Path

from grader.engine import sanitize
from grader.infra.runner import RunnerSpec
from grader.results import BinaryRun
from grader.status import RunStatus, SanitizerStatus


class Isolation:
    def runner(self, binary, prefix=None, env=None):
        return RunnerSpec(Path(binary), list(prefix or []))


def test_only_racecheck_runs_each_case_once(monkeypatch):
    seen = {}

    def run_passes(checker, lab_id, passes, **kw):
        runs = []
        for p in passes:
            seen[p.runner.prefix[1]] = p.first_call_only
            run = BinaryRun(str(checker), RunStatus.COMPLETED)
            run.runner_exits = [{"how": {"code": 0}}]
            runs.append(run)
        return runs

    monkeypatch.setattr(sanitize, "available", lambda: True)
    monkeypatch.setattr(sanitize, "run_passes", run_passes)
    for tool in sanitize.TOOLS:
        got = sanitize.run_tool(Path("checker"), "04", Path("runner"), Isolation(), tool)
        assert got.status == SanitizerStatus.CLEAN
    assert seen == {
        "--tool=memcheck": False,
        "--tool=racecheck": True,
        "--tool=synccheck": False,
        "--tool=initcheck": False,
    }


def test_a_tools_call_is_bounded_by_tool_call_seconds():
    """A hang under a tool now costs the points (reference_tools.py): its call
    limit is what a lab that hangs when watched costs the batch."""
    passes = sanitize.tool_passes(Path("runner"), Isolation(), ("memcheck", "racecheck"), env=None)
    assert [p.call_timeout for p in passes] == [sanitize.TOOL_CALL_SECONDS] * 2
    assert [p.max_timeouts for p in passes] == [sanitize.TOOL_MAX_TIMEOUTS] * 2
    short = sanitize.tool_passes(Path("runner"), Isolation(), ("memcheck",), env=None, timeout=20)
    assert short[0].call_timeout == 20 and sanitize.TOOL_CALL_SECONDS == 60.0
