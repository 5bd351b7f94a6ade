"""grader/infra/isolation.py: the runner's namespaces as the grader builds them.
Each test runs the real wrapping (unshare, setpriv when root) around a shell."""

import pytest

from grader.infra import isolation, proc

NS = isolation.runner_namespaces()
needs_private_network = pytest.mark.skipif(
    not (NS.ok and NS.private_network),
    reason=f"no network namespace for the runner here: {NS.why or 'PID namespace only'}",
)


def _inside(script: str) -> proc.Finished:
    as_nobody = isolation._as_nobody() or []
    return proc.run(as_nobody + list(NS.prefix) + ["/bin/sh", "-c", script], timeout=60)


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
