"""grader/engine/sharing/gate.py and the held-back timed tests (lab_grading.TimedPart): a timed run
never overlaps another run on its GPU, a waiting timed run is not starved,
and a lab graded in two runs is scored on every test of both."""

import threading
import time

from grader import labmeta
from grader.engine import lab_grading, lab_parts
from grader.engine.checker_run import CheckerOptions
from grader.engine.sharing import gate as gate_mod
from grader.engine.sharing.gate import Gate, held
from grader.results import BinaryRun, CaseResult

COURSE = labmeta.load()


def test_a_timed_run_never_overlaps_a_shared_one():
    gate = Gate("gpu")
    inside = {"shared": 0, "exclusive": 0}
    overlaps: list[str] = []
    lock = threading.Lock()

    def use(exclusive: bool) -> None:
        for _ in range(20):
            with held(gate, exclusive):
                with lock:
                    kind = "exclusive" if exclusive else "shared"
                    inside[kind] += 1
                    if inside["exclusive"] > 1 or (inside["exclusive"] and inside["shared"]):
                        overlaps.append(str(inside))
                time.sleep(0.001)
                with lock:
                    inside[kind] -= 1

    threads = [threading.Thread(target=use, args=(k % 3 == 0,)) for k in range(9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert overlaps == []


def test_a_waiting_timed_run_stops_new_shared_runs():
    gate = Gate("gpu")
    order: list[str] = []
    first_in = threading.Event()
    release_first = threading.Event()

    def long_shared():
        with gate.shared():
            first_in.set()
            release_first.wait(10)
        order.append("shared-1 out")

    def timed():
        with gate.exclusive():
            order.append("timed")

    def late_shared():
        with gate.shared():
            order.append("shared-2")

    a = threading.Thread(target=long_shared)
    a.start()
    first_in.wait(10)
    b = threading.Thread(target=timed)
    b.start()
    while not gate._waiting:  # the timed run is queued behind the first shared one
        time.sleep(0.001)
    c = threading.Thread(target=late_shared)
    c.start()
    time.sleep(0.05)
    assert order == []  # the late shared run waits for the queued timed one
    release_first.set()
    for t in (a, b, c):
        t.join(10)
    assert order == ["shared-1 out", "timed", "shared-2"]
    assert gate.waited_seconds > 0.04


def _case(name, status="passed", **props):
    return CaseResult(name, status, 1.0, {k: str(v) for k, v in props.items()}, [])


def test_a_lab_graded_in_two_runs_is_scored_on_both(monkeypatch):
    lab = COURSE.lab("07")
    untimed = BinaryRun(
        "checker",
        "completed",
        0,
        cases=[_case("SumContract.X"), _case("SumZHuge.Above2To32Elements")],
    )
    first = lab_grading.score(lab, untimed)
    assert first.points_correctness == lab.points_correctness and first.fraction is None
    calls = []

    def fake_run_checker(checker, lab_id, runner, **kw):
        calls.append(kw["options"].gtest_filter)
        fraction = lab.threshold + 0.01
        return BinaryRun(
            "checker",
            "completed",
            0,
            cases=[
                _case("SumBandwidth.FractionOfCopyCeiling", fraction=fraction, gbps=1000, graded=1)
            ],
        )

    monkeypatch.setattr(lab_parts, "run_checker", fake_run_checker)

    class Iso:
        def runner(self, binary, prefix=(), env=None):
            return binary

    part = lab_grading.TimedPart(lab, first, untimed, "checker", "runner", CheckerOptions())
    full = part.run(Iso())
    assert calls == [lab_grading.TIMED_TESTS]
    assert full.tests_passed == 3 and full.points == lab.points_correctness + lab.points_performance
    assert "timed" in full.timing

    # A timed call that returns a wrong answer costs the correctness points too.
    def wrong(checker, lab_id, runner, **kw):
        return BinaryRun(
            "checker",
            "completed",
            1,
            cases=[_case("SumBandwidth.FractionOfCopyCeiling", "failed", fail_hint="wrong_value")],
        )

    monkeypatch.setattr(lab_parts, "run_checker", wrong)
    worse = lab_grading.TimedPart(lab, first, untimed, "checker", "runner", CheckerOptions()).run(
        Iso()
    )
    assert worse.points == 0 and worse.tests_failed == 1


def test_only_a_lab_with_every_correctness_point_is_timed():
    lab = COURSE.lab("07")
    ok = lab_grading.score(lab, BinaryRun("c", "completed", 0, cases=[_case("SumContract.X")]))
    bad = lab_grading.score(
        lab, BinaryRun("c", "completed", 1, cases=[_case("SumContract.X", "failed")])
    )
    assert lab_grading.timed_tests_later(lab, ok) and not lab_grading.timed_tests_later(lab, bad)
    ok.points_correctness = 0  # compute-sanitizer found a hazard
    assert not lab_grading.timed_tests_later(lab, ok)


def test_runs_at_once_are_bounded_by_the_gpus_memory():
    from grader.infra.gpus import GPU_RUNS_AT_ONCE, Gpu, runs_at_once

    h200, h100 = Gpu(0, "u", "b", "H200", 0, 143771), Gpu(0, "u", "b", "H100", 0, 81559)
    assert runs_at_once(h200) == GPU_RUNS_AT_ONCE == 4
    assert runs_at_once(h100) == 3  # four runs of the 2^32 case would not fit 80 GB
    assert runs_at_once(Gpu(0, "u", "b", "T4", 0, 15360)) == 1
    assert runs_at_once(Gpu(0, "u", "b", "?", 0, 0)) == 1  # memory not known
    assert runs_at_once(h200, most=6) == 6 and runs_at_once(h200, most=9) == 7


def _most_at_once(slot, threads: int) -> int:
    """slot: a lock (or semaphore), or a function that makes a context manager."""
    inside, most = [0], [0]
    lock = threading.Lock()

    def use() -> None:
        with slot() if callable(slot) and not hasattr(slot, "acquire") else slot:
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.05)
            with lock:
                inside[0] -= 1

    workers = [threading.Thread(target=use) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return most[0]


def test_sanitizer_runs_share_only_in_private_networks():
    from types import SimpleNamespace

    from grader.engine.sharing import sanitizer_places

    # One network namespace for all: the tool's PID-named socket collides, one at a time.
    assert _most_at_once(sanitizer_places.place(SimpleNamespace(private_network=False)), 4) == 1
    assert _most_at_once(sanitizer_places.place(SimpleNamespace()), 4) == 1
    # A namespace each (contained with --net, or a sandbox cell): up to SANITIZER_SLOTS.
    shared = sanitizer_places.place(SimpleNamespace(private_network=True))
    assert (
        _most_at_once(shared, sanitizer_places.SANITIZER_SLOTS + 3)
        == sanitizer_places.SANITIZER_SLOTS
    )


def test_every_shared_run_takes_a_run_slot():
    gate = Gate("gpu", run_slots=2)
    assert _most_at_once(lambda: held(gate), 6) == 2
    assert _most_at_once(lambda: held(Gate("gpu")), 6) == 6  # no slots: no bound


def test_a_stalled_shared_run_does_not_stop_the_others_and_the_timed_run_still_runs_alone():
    # A hung student holds the GPU until its timeout: the timed run waits for it,
    # but the other workers' shared runs go on meanwhile, never beside the timed one.
    gate = Gate("gpu", stall_seconds=0.3)
    events: list[str] = []
    lock = threading.Lock()
    inside = {"shared": 0, "timed": 0}
    hung_in, release_hung = threading.Event(), threading.Event()

    def note(what: str) -> None:
        with lock:
            events.append(what)
            if inside["timed"] and inside["shared"]:
                events.append("OVERLAP")

    def hung():
        with gate.shared():
            inside["shared"] += 1
            hung_in.set()
            release_hung.wait(10)
            inside["shared"] -= 1
        note("hung out")

    def timed():
        with gate.exclusive():
            inside["timed"] += 1
            note("timed")
            time.sleep(0.05)
            inside["timed"] -= 1

    def other():
        with gate.shared():
            inside["shared"] += 1
            note("other")
            inside["shared"] -= 1

    h = threading.Thread(target=hung)
    h.start()
    hung_in.wait(10)
    t = threading.Thread(target=timed)
    t.start()
    while not gate._waiting:
        time.sleep(0.001)
    o = threading.Thread(target=other)
    o.start()
    o.join(timeout=5)  # starts once the hung run is 0.3 s old, not when it ends
    assert not o.is_alive() and events == ["other"]
    release_hung.set()
    for x in (h, t):
        x.join(timeout=10)
    assert events == ["other", "hung out", "timed"]


def test_cuda_visible_devices_limits_the_gpus_a_batch_takes(monkeypatch):
    # Read as CUDA reads it: indices or UUIDs (a UUID's start will do), in the
    # order given, up to the first entry that names no GPU; empty hides them all.
    from grader.infra import gpus

    found = tuple(gpus.Gpu(i, f"GPU-{i}aaa-{i}", f"0:{i}", "H100", i, 81559) for i in range(3))
    monkeypatch.setattr(gpus, "list_gpus", lambda: found)
    for setting, want in [
        (None, [0, 1, 2]),
        ("2,0", [2, 0]),
        ("GPU-1aaa", [1]),
        ("1aaa-1", [1]),  # without the GPU- prefix
        ("0,7,1", [0]),  # 7 names none: the list ends there
        ("1,1", [1]),
        ("", []),
        ("-1", []),
        ("NoDevFiles", []),  # what Slurm writes for a job without GPUs
    ]:
        if setting is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", setting)
        assert [g.index for g in gpus.visible()] == want, setting
        assert gpus.visible_gpus() == [found[i].uuid for i in want]


def test_a_batch_says_which_gpus_cuda_visible_devices_leaves(monkeypatch):
    from grader.infra import gpus

    found = tuple(gpus.Gpu(i, f"GPU-{i}", f"0:{i}", "H100", i, 81559) for i in range(2))
    monkeypatch.setattr(gpus, "list_gpus", lambda: found)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert gpus.visible_note() is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert gpus.visible_note() == "CUDA_VISIBLE_DEVICES=1: grading on GPU 1 of the machine's 2"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpus.visible_note().endswith("grading on GPU none of the machine's 2")


class _Scene:
    """A gate with one long shared run in flight ("busy"), and threads that
    take it timed or shared, each noting its name in `order` once inside."""

    def __init__(self, gate: Gate, busy: str = "busy") -> None:
        self.gate, self.busy, self.order = gate, busy, []
        self.threads: list[threading.Thread] = []
        self._in, self._release = threading.Event(), threading.Event()
        self._start(self._long)
        self._in.wait(10)

    def _long(self) -> None:
        with self.gate.shared():
            self._in.set()
            self._release.wait(10)
        self.order.append(f"{self.busy} out")

    def _start(self, target, *args) -> threading.Thread:
        t = threading.Thread(target=target, args=args)
        t.start()
        self.threads.append(t)
        return t

    def timed(self, name: str = "timed") -> None:
        """Starts a timed run, and returns once it waits."""
        waiting = self.gate._waiting
        self._start(self._take, self.gate.exclusive, name)
        while self.gate._waiting <= waiting:
            time.sleep(0.001)

    def shared(self, name: str = "shared") -> threading.Thread:
        return self._start(self._take, self.gate.shared, name)

    def _take(self, side, name: str) -> None:
        with side():
            self.order.append(name)

    def end(self) -> list[str]:
        """Ends the long run; the order once every thread is done."""
        self._release.set()
        for t in self.threads:
            t.join(timeout=10)
        assert not any(t.is_alive() for t in self.threads), "deadlock"
        return self.order


def test_a_batch_gate_drains_once_for_several_timed_runs():
    # Each drain costs every worker the longest run in flight, so a batch's gate
    # lets shared runs go on until drain_at timed runs wait, then serves them all.
    scene = _Scene(Gate("gpu", drain_at=2, drain_after=60))
    scene.timed("timed-1")
    first = scene.shared("shared-1")
    first.join(timeout=5)  # one timed run waiting: no drain yet
    assert not first.is_alive() and scene.order == ["shared-1"]
    scene.timed("timed-2")
    scene.shared("shared-2")
    time.sleep(0.05)
    assert scene.order == ["shared-1"]  # two waiting: new shared runs wait for both
    order = scene.end()
    assert order[:2] == ["shared-1", "busy out"]
    assert sorted(order[2:4]) == ["timed-1", "timed-2"] and order[4] == "shared-2"


def test_a_lone_timed_run_waits_at_most_drain_after():
    scene = _Scene(Gate("gpu", drain_at=8, drain_after=0.2))
    scene.timed()
    time.sleep(0.3)  # past drain_after: a drain is due
    scene.shared()
    time.sleep(0.05)
    assert scene.order == []
    assert scene.end() == ["busy out", "timed", "shared"]


def test_a_timed_run_on_a_quiet_gpu_does_not_wait_for_a_drain():
    gate = Gate("gpu", drain_at=8, drain_after=60)
    started = time.monotonic()
    with gate.exclusive():
        pass
    assert time.monotonic() - started < 1


def test_a_stall_lets_shared_runs_start_only_for_the_first_stall_seconds_of_a_drain():
    # Under load some run is nearly always stalled: unbounded, the exemption
    # starved the timed runs. Past stall_seconds of the drain, new runs wait.
    scene = _Scene(Gate("gpu", stall_seconds=0.3), busy="hung")
    scene.timed()
    early = scene.shared("early")
    early.join(timeout=5)  # the hung run is stalled and the drain young: admitted
    assert not early.is_alive()
    time.sleep(0.4)  # the drain is now older than stall_seconds
    scene.shared("late")
    time.sleep(0.1)
    assert scene.order == ["early"]  # waits, although the hung run is still stalled
    assert scene.end() == ["early", "hung out", "timed", "late"]


def test_a_run_whose_processes_start_holds_the_gate_but_no_slot():
    """Its start (contexts, sandbox) uses no slot; yet the lab's code may already
    run, so a timed run waits for it as for any shared run."""
    gate = Gate("gpu", run_slots=1)
    order: list[str] = []
    started, go = threading.Event(), threading.Event()

    def starting_run():
        with gate.shared_pass() as ticket:
            started.set()
            go.wait(10)
            with ticket.slot():
                order.append("run in its slot")

    def other():  # takes the one slot while the first run starts
        with gate.shared():
            order.append("other in the slot")

    def timed():
        with gate.exclusive():
            order.append("timed")

    a = threading.Thread(target=starting_run)
    a.start()
    started.wait(10)
    b = threading.Thread(target=other)
    b.start()
    b.join(10)
    assert order == ["other in the slot"]  # the starting run held no slot
    c = threading.Thread(target=timed)
    c.start()
    time.sleep(0.05)
    assert order == ["other in the slot"]  # the timed run waits for the starting one
    go.set()
    for t in (a, c):
        t.join(10)
    assert order == ["other in the slot", "run in its slot", "timed"]


def test_a_run_stalls_in_its_start_or_its_slot_never_in_its_wait_for_one():
    gate = Gate("gpu", run_slots=1, stall_seconds=0.05)

    def stalled() -> bool:
        with gate._cond:
            return gate._stalled()

    with gate.shared_pass() as ticket:
        time.sleep(0.1)  # a program that hangs as it starts
        assert stalled()
    holder_in, release = threading.Event(), threading.Event()

    def holder():  # another run holds the one slot
        with gate.shared():
            holder_in.set()
            release.wait(10)

    def wait_for_slot(ticket):
        with ticket.slot():
            pass

    h = threading.Thread(target=holder)
    h.start()
    holder_in.wait(10)
    with gate.shared_pass() as ticket:
        w = threading.Thread(target=wait_for_slot, args=(ticket,))
        w.start()
        time.sleep(0.1)  # up in time, then a long wait for the slot
        with gate._cond:
            waiting = sorted(t is None for t in gate._started.values())
        assert waiting == [False, True]  # the holder's time counts, the wait does not
        release.set()
        w.join(10)
    h.join(10)
    assert not gate._started


class _FakePart:
    """A timed part whose 'processes' start (up_after seconds, or never: they
    end first when dies), then wait for the turn's admission as a checker does,
    and note what ran when."""

    def __init__(self, name: str, log: list, up_after: float = 0.02, dies: bool = False):
        self.name, self.log, self.up_after, self.dies = name, log, up_after, dies

    def run(self, turn, i: int) -> None:
        try:
            time.sleep(self.up_after)
            self.log.append(f"{self.name} up" if not self.dies else f"{self.name} died")
            if self.dies:
                return
            with turn.admit(i)():
                self.log.append(f"{self.name} timed")
                time.sleep(0.02)
                self.log.append(f"{self.name} done")
        finally:
            turn.settle(i)


def _turn(gate: Gate, parts: list[_FakePart], log: list, name: str) -> threading.Thread:
    def go():
        with gate.timed_turn(len(parts)) as turn:
            log.append(f"{name} turn")
            ts = [threading.Thread(target=p.run, args=(turn, i)) for i, p in enumerate(parts)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(10)
        log.append(f"{name} out")

    t = threading.Thread(target=go)
    t.start()
    return t


def test_a_timed_turn_starts_its_parts_while_a_drain_runs_and_times_them_alone():
    """The parts start beside the shared run in flight (its start is then no
    time alone), are timed only once it has ended, and one at a time."""
    gate = Gate("gpu", drain_at=1)
    log: list[str] = []
    in_flight, release = threading.Event(), threading.Event()

    def shared():
        with gate.shared():
            in_flight.set()
            release.wait(10)
            log.append("shared out")

    s = threading.Thread(target=shared)
    s.start()
    in_flight.wait(10)
    t = _turn(gate, [_FakePart("a", log), _FakePart("b", log)], log, "alice")
    deadline = time.monotonic() + 5
    while log.count("a up") + log.count("b up") < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert sorted(log) == ["a up", "alice turn", "b up"]  # up beside the shared run
    with_gate = []

    def late_shared():
        with gate.shared():
            with_gate.append(list(log))

    late = threading.Thread(target=late_shared)
    late.start()
    time.sleep(0.05)
    assert not with_gate  # the drain holds new shared runs back
    release.set()
    for th in (s, t, late):
        th.join(10)
    timed = [e for e in log if e.endswith(("timed", "done"))]
    assert log.index("shared out") < log.index(timed[0])
    assert timed in (
        ["a timed", "a done", "b timed", "b done"],
        ["b timed", "b done", "a timed", "a done"],
    )
    assert with_gate and "alice out" in with_gate[0]  # after the turn, not during it
    assert gate._turn is None and not gate._exclusive and not gate._waiting


def test_two_students_turns_never_have_processes_up_at_once():
    """A runner may launch kernels while it waits: no other student's process
    is up while a turn holds the GPU alone."""
    gate = Gate("gpu")
    log: list[str] = []
    a = _turn(gate, [_FakePart("a1", log), _FakePart("a2", log)], log, "alice")
    b = _turn(gate, [_FakePart("b1", log), _FakePart("b2", log)], log, "bob")
    for t in (a, b):
        t.join(10)
    first, second = (
        ("alice", "bob") if log.index("alice turn") < log.index("bob turn") else ("bob", "alice")
    )
    assert log.index(f"{first} out") < log.index(f"{second} turn")


def test_a_part_that_dies_as_it_starts_does_not_hold_the_turn():
    gate = Gate("gpu")
    log: list[str] = []
    t = _turn(gate, [_FakePart("a", log, dies=True), _FakePart("b", log)], log, "alice")
    t.join(5)
    assert not t.is_alive()
    assert "b done" in log and "a timed" not in log


def test_a_part_that_hangs_as_it_starts_delays_its_turn_at_most_start_seconds(monkeypatch):
    monkeypatch.setattr(gate_mod, "START_SECONDS", 0.2)
    gate = Gate("gpu")
    log: list[str] = []
    started = time.monotonic()
    t = _turn(gate, [_FakePart("slow", log, up_after=1.0), _FakePart("b", log)], log, "alice")
    deadline = time.monotonic() + 5
    while "b done" not in log and time.monotonic() < deadline:
        time.sleep(0.005)
    assert 0.15 < time.monotonic() - started < 0.9  # b did not wait for the slow start
    assert "slow up" not in log
    t.join(5)
    assert log[-1] == "alice out" and "slow done" in log  # the turn ends with its last part


def test_a_run_alone_waits_for_a_turn_whose_processes_are_up():
    gate = Gate("gpu")
    log: list[str] = []
    t = _turn(gate, [_FakePart("a", log, up_after=0.2)], log, "alice")
    while "alice turn" not in log:
        time.sleep(0.001)
    with gate.exclusive():
        log.append("alone")
    t.join(5)
    assert log.index("alice out") < log.index("alone")
