"""What the grader installs when meson, ninja or pytest is missing: into the
repository's own .venv, never the system Python (no --user, no
--break-system-packages)."""

import os

import pytest

from grader.infra import proc, toolchain


class Done:
    def __init__(self, ok=True, output=""):
        self.ok, self.output, self.code = ok, output, 0 if ok else 1


def test_missing_tools_go_into_the_repository_venv(tmp_path, monkeypatch):
    venv = tmp_path / ".venv"
    monkeypatch.setattr(toolchain, "VENV", venv)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    calls = []

    def run(cmd, timeout=None, **kw):
        calls.append([str(c) for c in cmd])
        if "venv" in cmd:
            (venv / "bin").mkdir(parents=True)
            (venv / "bin" / "python").write_text("")
        return Done()

    monkeypatch.setattr(proc, "run", run)
    toolchain._pip_install(["meson", "ninja"])
    assert calls[0][1:4] == ["-m", "venv", "--system-site-packages"]
    assert calls[1][:4] == [str(venv / "bin" / "python"), "-m", "pip", "install"]
    assert not any("--break-system-packages" in c or "--user" in c for call in calls for c in call)
    assert os.environ["PATH"].split(os.pathsep)[0] == str(venv / "bin")


def test_a_failed_install_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setattr(toolchain, "VENV", tmp_path / ".venv")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").write_text("")
    monkeypatch.setattr(proc, "run", lambda cmd, timeout=None, **kw: Done(False, "no network"))
    with pytest.raises(toolchain.SetupError, match="pip install meson"):
        toolchain._pip_install(["meson"])
