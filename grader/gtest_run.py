"""Run one gtest binary and keep every result it produced, whatever happens.

The source of truth is gtest's own JSON report. A binary that crashes, loses
its CUDA context or hangs writes no report, so the test binaries also stream
one JSON line per finished test ($LAB_RESULT_STREAM, see
tests/support/result_stream.hpp). From the stream we keep the finished tests,
mark the one that was running as crashed or timed out, and start the binary
again on the tests that have not run yet.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import stat
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

SKIP_EXIT = 77  # GNU convention: the binary cannot run here (no GPU)
# gtest's own keys in a JSON testcase object; everything else is a RecordProperty.
_GTEST_KEYS = {"name", "file", "line", "status", "result", "timestamp", "time", "classname",
               "failures", "value_param", "type_param"}


@dataclass
class CaseResult:
    name: str                 # Suite.Test, as --gtest_filter spells it
    status: str               # passed | failed | skipped | crashed | timed_out
    time_ms: float = 0.0
    properties: dict[str, str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status in ("passed", "skipped")


@dataclass
class BinaryRun:
    binary: str
    status: str               # completed | skipped | crashed | timed_out | missing
    exit_code: int | None = None
    reason: str = ""          # why skipped / crashed / timed out, one line
    properties: dict[str, str] = field(default_factory=dict)   # seed, lab, impl
    cases: list[CaseResult] = field(default_factory=list)
    output_tail: str = ""
    restarts: int = 0

    @property
    def passed(self) -> int:
        return sum(c.status == "passed" for c in self.cases)

    @property
    def failed(self) -> list[CaseResult]:
        return [c for c in self.cases if not c.ok]

    def case(self, name: str) -> CaseResult | None:
        return next((c for c in self.cases if c.name == name), None)

    def to_dict(self) -> dict:
        return asdict(self)


def _seconds_to_ms(text: str) -> float:
    try:
        return float(text.rstrip("s")) * 1000.0
    except ValueError:
        return 0.0


def parse_gtest_json(data: dict) -> tuple[dict[str, str], list[CaseResult]]:
    """gtest's --gtest_output=json report -> (program properties, cases)."""
    program = {k: str(v) for k, v in data.items()
               if isinstance(v, (str, int, float)) and k not in
               ("tests", "failures", "disabled", "errors", "timestamp", "time", "name")}
    cases = []
    for suite in data.get("testsuites", []):
        for t in suite.get("testsuite", []):
            if t.get("status") == "NOTRUN":
                continue
            failures = [f.get("failure", "") for f in t.get("failures", [])]
            if failures:
                status = "failed"
            elif t.get("result") == "SKIPPED":
                status = "skipped"
            else:
                status = "passed"
            props = {k: str(v) for k, v in t.items() if k not in _GTEST_KEYS}
            cases.append(CaseResult(f"{suite['name']}.{t['name']}", status,
                                    _seconds_to_ms(t.get("time", "0s")), props, failures))
    return program, cases


def parse_stream(text: str) -> tuple[list[CaseResult], str | None, str]:
    """Result stream -> (finished cases, test running when it stopped, abort reason)."""
    cases: list[CaseResult] = []
    running: str | None = None
    abort = ""
    for line in text.splitlines():
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by the crash
        if not isinstance(ev, dict):
            continue
        if ev.get("event") == "start":
            running = ev["test"]
        elif ev.get("event") == "end":
            try:
                cases.append(CaseResult(ev["test"], ev["result"], float(ev.get("time_ms", 0)),
                                        dict(ev.get("properties", {})),
                                        list(ev.get("failures", []))))
            except (KeyError, TypeError, ValueError):
                continue
            running = None
        elif ev.get("event") == "abort":
            abort = ev.get("reason", "")
    return cases, running, abort


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _read_file(path: Path, limit: int = 64 << 20) -> str | None:
    """A file's text, or None when there is no regular file there. Never follows a
    link nor blocks on a FIFO: a sandboxed binary controls the folder it writes in."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        return f.read(limit).decode(errors="replace")


def _execute(args: list[str], env: dict, timeout: float, log: Path,
             output_limit: int | None) -> tuple[int | None, str, bool, bool]:
    """Runs args with stdout and stderr in `log`, in a process group of its own.
    Returns (exit code or None, the output's tail, timed out, output over the limit);
    on a timeout or too much output the whole group is killed."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        timed_out = over = False
        while True:
            try:
                proc.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                pass
            timed_out = time.monotonic() > deadline
            over = output_limit is not None and os.fstat(out.fileno()).st_size > output_limit
            if timed_out or over:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
                break
    with open(log, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - 4000))
        tail = f.read().decode(errors="replace")
    return (None if timed_out else proc.returncode), tail, timed_out, over


def run_gtest(binary: str | os.PathLike, *, timeout: float = 600.0, env: dict | None = None,
              seed: int | None = None, gtest_filter: str | None = None,
              max_restarts: int = 8, sandbox=None) -> BinaryRun:
    """Runs all tests of `binary` (or those matching gtest_filter) and returns every result.

    After a crash the binary starts again without the tests already done and
    the one that crashed (at most max_restarts times); after a timeout it does
    not, since a kernel that hangs would most likely hang the next test too.

    sandbox: a hook (grader.sandbox.Cell) that runs each attempt in a sandbox:
    sandbox.command(args, env) -> (args, env); its workdir receives the report
    and stream; its output_limit caps stdout + stderr; sandbox.explain(code)
    names a limit that ended the process."""
    binary = str(binary)
    run = BinaryRun(binary=binary, status="completed")
    if not os.access(binary, os.X_OK):
        run.status, run.reason = "missing", f"{binary} was not built"
        return run
    done: list[str] = []
    output_limit = getattr(sandbox, "output_limit", None)
    with tempfile.TemporaryDirectory(prefix="gtest-run-") as tmp:
        work = Path(sandbox.workdir) if sandbox is not None else Path(tmp)
        for attempt in range(max_restarts + 1):
            report, stream = work / f"report{attempt}.json", work / f"stream{attempt}.jsonl"
            for stale in (report, stream):   # a sandboxed binary may have left anything there
                if stale.is_dir() and not stale.is_symlink():
                    shutil.rmtree(stale, ignore_errors=True)
                else:
                    stale.unlink(missing_ok=True)
            args = [binary, f"--gtest_output=json:{report}"]
            if seed is not None:
                args.append(f"--seed={seed}")
            filt = gtest_filter or "*"
            if done:
                filt += "-" + ":".join(done) if "-" not in filt else ":" + ":".join(done)
            args.append(f"--gtest_filter={filt}")
            full_env = dict(os.environ, **(env or {}), LAB_RESULT_STREAM=str(stream))
            if sandbox is not None:
                args, full_env = sandbox.command(args, full_env)
            code, out, timed_out, over = _execute(args, full_env, timeout,
                                                  Path(tmp, f"output{attempt}.log"), output_limit)
            run.exit_code = code
            run.output_tail = out[-4000:]
            report_text = _read_file(report)
            if code == SKIP_EXIT and report_text is None:
                run.status = "skipped"
                run.reason = next((l for l in out.splitlines() if l.startswith("SKIP")), "skipped")
                return run
            if report_text is not None and not timed_out and not over:
                try:
                    program, cases = parse_gtest_json(json.loads(report_text))
                except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
                    program, cases = None, []
                if program is not None:
                    run.properties.update(program)
                    run.cases.extend(cases)
                    return run
            # No report: keep what the stream says and resume after the culprit.
            cases, running, abort = parse_stream(_read_file(stream) or "")
            run.cases.extend(cases)
            done.extend(c.name for c in cases)
            limit_hit = sandbox.explain(code) if sandbox is not None else None
            why = (f"timed out after {timeout:.0f} s" if timed_out else
                   f"stopped: wrote more than {output_limit >> 20} MiB of output" if over else
                   limit_hit or abort or _describe_exit(code))
            if running is not None:
                run.cases.append(CaseResult(running, "timed_out" if timed_out else "crashed",
                                            failures=[f"{running}: {why}"]))
                done.append(running)
            run.status = "timed_out" if timed_out else "crashed"
            run.reason = why
            if running is None and not cases:
                return run  # died before any test started: nothing to resume
            if timed_out:
                # A kernel that never ends would hang every later test too: stop here.
                return run
            run.restarts = attempt + 1
        return run
