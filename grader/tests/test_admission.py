"""grader/engine/sharing/admission.py with a stand-in checker (a Python child that speaks
the protocol of tests/support/checker_main.cpp): the slot is taken only once
the checker says it is up, left once it has ended, never taken for a checker
that ended before, and the wait for it is not run time."""

import contextlib
import os
import sys
import time

from grader.engine.sharing.admission import Admission
from grader.infra import proc

# argv[1], argv[2]: READY and GO; argv[3]: "ready" to say so, anything else to exit first.
CHILD = """
import os, sys, time
ready, go = int(sys.argv[1]), int(sys.argv[2])
if sys.argv[3] != "ready":
    sys.exit(3)
os.write(ready, b"r")
if os.read(go, 1) != b"g":
    sys.exit(4)
time.sleep(float(sys.argv[4]))
print("tests ran")
"""


class Slot:
    """A slot that records when it was entered and left, and may make the run wait."""

    def __init__(self, wait: float = 0.0) -> None:
        self.wait, self.events = wait, []

    @contextlib.contextmanager
    def __call__(self):
        time.sleep(self.wait)
        self.events.append(("in", time.monotonic()))
        try:
            yield
        finally:
            self.events.append(("out", time.monotonic()))


def run(admission: Admission, *args: str, timeout: float = 30.0) -> proc.Finished:
    ready, go = admission.child_fds
    try:
        return proc.run(
            [sys.executable, "-c", CHILD, str(ready), str(go), *args],
            timeout=timeout,
            options=proc.RunOptions(
                pass_fds=admission.child_fds,
                on_start=admission.started,
                paused=admission.paused,
            ),
        )
    finally:
        admission.close()


def test_the_slot_is_taken_once_the_checker_is_up_and_left_once_it_ended():
    slot = Slot()
    admission = Admission(slot)
    began = time.monotonic()
    done = run(admission, "ready", "0.2")
    ended = time.monotonic()
    assert done.ok and "tests ran" in done.output, done.output
    assert [e for e, _ in slot.events] == ["in", "out"]
    (_, entered), (_, left) = slot.events
    assert began < entered and left - entered >= 0.2 and left <= ended


def test_a_checker_that_ends_before_it_is_ready_takes_no_slot():
    slot = Slot()
    done = run(Admission(slot), "exit")
    assert done.code == 3 and slot.events == []


def test_the_wait_for_a_slot_is_not_run_time():
    # 0.6 s for a slot against a limit of 0.4 s: the run itself takes 0.1 s.
    slot = Slot(wait=0.6)
    done = run(Admission(slot), "ready", "0.1", timeout=0.4)
    assert done.ok and not done.timed_out, done.output
    assert done.seconds >= 0.6


def test_a_run_that_overruns_once_in_its_slot_still_times_out():
    slot = Slot(wait=0.3)
    done = run(Admission(slot), "ready", "5", timeout=0.5)
    assert done.timed_out and [e for e, _ in slot.events] == ["in", "out"]


def test_no_descriptor_is_left_open():
    before = len(os.listdir("/proc/self/fd"))
    for args in (("ready", "0"), ("exit",)):
        run(Admission(Slot()), *args)
    assert len(os.listdir("/proc/self/fd")) == before
