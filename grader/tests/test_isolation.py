"""grader/infra/isolation.py: the runner's namespaces as the grader builds them.
Each test runs the real wrapping (unshare, setpriv when root) around a shell."""

import concurrent.futures

import pytest

from grader.infra import isolation, proc

NS = isolation.runner_namespaces()
needs_private_network = pytest.mark.skipif(
    not (NS.ok and NS.private_network),
    reason=f"no network namespace for the runner here: {NS.why or 'PID namespace only'}",
)


def _run(command: list[str], prefix=NS.prefix) -> proc.Finished:
    """`command` in the runner's wrapping, as the runner's user."""
    as_nobody = isolation._as_nobody() or []
    return proc.run(as_nobody + list(prefix) + command, timeout=60)


def _inside(script: str) -> proc.Finished:
    return _run(["/bin/sh", "-c", script])


@needs_private_network
def test_the_runner_sees_loopback_alone_and_it_is_up():
    done = _inside("cat /proc/net/dev")
    assert done.code == 0, done.output
    interfaces = [line.split(":")[0].strip() for line in done.output.splitlines() if ":" in line]
    assert interfaces == ["lo"], done.output
    # compute-sanitizer connects to its target over TCP on 127.0.0.1.
    tcp = _inside(
        'exec python3 -I -c \'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); '
        's.listen(); socket.create_connection(s.getsockname(), timeout=5); print("connected")\''
    )
    assert tcp.code == 0 and "connected" in tcp.output, tcp.output


@needs_private_network
def test_the_runner_keeps_no_capability_and_is_pid_1():
    done = _inside('echo "pid $$"; grep -E "^Cap(Prm|Eff|Amb)" /proc/self/status')
    assert done.code == 0, done.output
    assert "pid 1" in done.output
    caps = [line.split()[1] for line in done.output.splitlines() if line.startswith("Cap")]
    assert caps and all(int(c, 16) == 0 for c in caps), done.output


def test_contained_says_what_it_got():
    iso = isolation.contained()
    try:
        assert iso.private_network == NS.private_network
        assert iso.prefix == list(NS.prefix)
        assert bool(iso.warning) == (not NS.ok)
    finally:
        iso.cleanup()


def test_without_a_usable_python_the_runner_keeps_its_pid_namespace(monkeypatch):
    # No interpreter `nobody` may run: no loopback to bring up, so no network
    # namespace, but the PID namespace stays and the grader says nothing false.
    if not NS.ok:
        pytest.skip(f"no namespaces here: {NS.why}")
    monkeypatch.setattr(isolation, "_pythons", lambda: ["/nonexistent/python3"])
    isolation.runner_namespaces.cache_clear()
    try:
        ns = isolation.runner_namespaces()
        assert ns.ok and not ns.private_network
        assert "--net" not in ns.prefix and ns.prefix[-1] == "--"
        iso = isolation.contained()
        try:
            assert not iso.private_network and not iso.warning
        finally:
            iso.cleanup()
    finally:
        isolation.runner_namespaces.cache_clear()


def _threads(prefix: list[str], count: int, seconds: float = 3.0) -> proc.Finished:
    """Start `count` threads that sleep, inside `prefix`, as the runner's user."""
    script = (
        "import threading, time\n"
        f"ts = [threading.Thread(target=time.sleep, args=({seconds},)) for _ in range({count})]\n"
        "for t in ts: t.start()\n"
        "print('started', len(ts))\n"
    )
    return _run(["python3", "-I", "-c", script], prefix)


def test_the_runner_gets_its_limits():
    if not NS.ok or "prlimit" not in " ".join(NS.prefix):
        pytest.skip(f"no namespaces or no prlimit here: {NS.why}")
    done = _inside("cat /proc/self/limits")
    assert done.code == 0, done.output
    lines = {line[:26].strip(): line[26:].split() for line in done.output.splitlines()}
    assert lines["Max processes"][:2] == [str(isolation.RUNNER_PROCESSES)] * 2, done.output
    data = str(isolation.Limits().memory_mb << 20)
    assert lines["Max data size"][:2] == [data, data], done.output


def test_the_process_limit_counts_one_runner_alone(monkeypatch):
    # Two runners at once, each under a limit of 40: 30 threads each must both
    # start (the kernel counts each user namespace apart), and 60 in one must not.
    if not NS.ok or "prlimit" not in " ".join(NS.prefix):
        pytest.skip(f"no namespaces or no prlimit here: {NS.why}")
    monkeypatch.setattr(isolation, "RUNNER_PROCESSES", 40)
    prefix = isolation._unshare_prefix(None) or []
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        both = list(pool.map(lambda _: _threads(prefix, 30), range(2)))
    for done in both:
        assert done.code == 0 and "started 30" in done.output, done.output
    too_many = _threads(prefix, 60, seconds=0.5)
    assert too_many.code != 0 and "can't start new thread" in too_many.output, too_many.output
