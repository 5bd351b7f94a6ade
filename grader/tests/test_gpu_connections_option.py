"""batch --gpu-connections: from the command line to the batch's config (one
queue by default), its fingerprint, and the environment of the runs that share
a GPU; a timed run's one queue (checker_run.TIMED_CONNECTIONS), whatever the
option or the shell says; none of it for a lab whose calls span GPUs."""

from pathlib import Path

import pytest

from grader import cli
from grader.commands import arguments
from grader.batch import config as batch_config
from grader.engine import checker_run, lab_grading
from grader.engine.sharing.gate import Gate

from test_shared_gpu import COURSE, grade_07, run_with

VARIABLE = "CUDA_DEVICE_MAX_CONNECTIONS"


def parse(*extra: str):
    return arguments.build_parser("test").parse_args(
        ["batch", "sub", "--out", "o", "--jobs-per-gpu", "4", *extra]
    )


def test_the_option_reaches_the_config(monkeypatch):
    seen = []
    from grader.batch import orchestrator as batch

    monkeypatch.setattr(batch, "run_batch", lambda subs, config, **kw: seen.append(config) or [])
    cli._batch(parse("--gpu-connections", "8"))
    assert seen and seen[0].gpu_connections == 8


def test_one_queue_is_the_default(monkeypatch):
    # A class grades faster with it (docs/decisions.md, "One queue per context
    # for the runs that share a GPU").
    seen = []
    from grader.batch import orchestrator as batch

    monkeypatch.setattr(batch, "run_batch", lambda subs, config, **kw: seen.append(config) or [])
    cli._batch(parse())
    assert seen and seen[0].gpu_connections == 1
    assert batch_config.BatchConfig(out=Path("o")).gpu_connections == 1


@pytest.mark.parametrize("value", ["0", "33", "-1"])
def test_a_value_cuda_does_not_take_is_refused(value, capsys):
    with pytest.raises(SystemExit):
        parse("--gpu-connections", value)
    assert "1 to 32" in capsys.readouterr().err


def test_results_graded_with_other_queues_do_not_mix():
    plain = batch_config.BatchConfig(out=Path("o"))
    assert batch_config.BatchConfig(out=Path("o"), gpu_connections=1).fingerprint() == (
        plain.fingerprint()
    )
    assert batch_config.BatchConfig(out=Path("o"), gpu_connections=8).fingerprint() != (
        plain.fingerprint()
    )


class RunnerEnvs:
    """An isolation like a sandbox cell's, whose runner gets only the variables
    handed to it: records them."""

    def __init__(self) -> None:
        self.envs: list[dict[str, str] | None] = []

    def runner(self, binary, prefix=(), env=None):
        self.envs.append(env)
        return binary

    def note(self):
        return ""


def envs_of(monkeypatch, lab_id: str, gate, gpu_connections, gpu_count=None, shell=None):
    """The environments a lab's checker runs would have (its timed part's last,
    run by TimedPart.run), the lab graded with its timed tests held back, every
    run faked to pass; `shell`: the variable's value in the grader's own
    environment (None: unset). Each run's runner, as a sandbox cell starts it,
    must get its checker's environment."""
    envs = []
    cell = RunnerEnvs()

    def fake_run_checker(checker, lab_id, spec, **kw):
        envs.append(checker_run.checker_env(kw["options"].env, kw["options"].perf, lab_id))
        return run_with()

    if shell is None:
        monkeypatch.delenv(VARIABLE, raising=False)
    else:
        monkeypatch.setenv(VARIABLE, shell)
    timed: list[lab_grading.TimedPart] = []
    result = grade_07(
        monkeypatch,
        fake_run_checker,
        gate,
        perf=True,
        lab_id=lab_id,
        timed_later=timed,
        gpu_count=gpu_count,
        gpu_connections=gpu_connections,
    )
    assert result.status == "graded", result.reason
    for part in timed:  # TimedPart.run times: perf on
        part.run(isolation=cell)
    assert len(cell.envs) == 1 and len(envs) == len(timed) + 1
    assert cell.envs[0] is not None
    assert cell.envs[0].get(VARIABLE) == envs[-1].get(VARIABLE)  # the timed runner's
    return envs


def test_runs_that_share_a_gpu_get_it_and_the_timed_run_one_queue(monkeypatch):
    untimed, timed = envs_of(monkeypatch, "07", Gate("gpu"), 1)
    assert untimed[VARIABLE] == "1" and untimed["LAB_GPU_WAIT"] == "block"
    assert timed[VARIABLE] == str(checker_run.TIMED_CONNECTIONS) == "1"
    untimed, timed = envs_of(monkeypatch, "07", Gate("gpu"), 8)
    assert untimed[VARIABLE] == "8" and timed[VARIABLE] == "1"


def test_the_instructors_own_setting_never_reaches_a_timed_run(monkeypatch):
    untimed, timed = envs_of(monkeypatch, "07", Gate("gpu"), None, shell="4")
    assert timed[VARIABLE] == "1" and VARIABLE not in untimed
    untimed, timed = envs_of(monkeypatch, "07", Gate("gpu"), 2, shell="4")
    assert timed[VARIABLE] == "1" and untimed[VARIABLE] == "2"


def test_without_the_option_or_a_shared_gpu_only_the_timed_run_has_it(monkeypatch):
    for gate, connections in ((Gate("gpu"), None), (None, 1)):
        envs = envs_of(monkeypatch, "07", gate, connections)
        assert all(VARIABLE not in env for env in envs[:-1]) and envs[-1][VARIABLE] == "1"


def test_a_lab_whose_calls_span_gpus_keeps_cudas_default(monkeypatch):
    """Lab 12's kernels wait on flags another GPU's kernels set: its queues stay
    as CUDA makes them, timed or not."""
    lab = COURSE.lab("12")
    assert lab.spans_gpus
    envs = envs_of(monkeypatch, lab.id, Gate("gpu"), 1, gpu_count=lab.min_gpus)
    assert envs and all(VARIABLE not in env for env in envs)


def test_every_timed_run_has_one_queue_not_only_a_batchs():
    """calibrate and gpucheck call run_checker themselves: the rule is in the
    environment every checker run is given, from the lab it names."""
    shell = {VARIABLE: "4", "PATH": "/bin"}
    timed = checker_run.checker_env(shell, perf=True, lab_id="07_atomic_finish")
    assert timed[VARIABLE] == "1" and timed["PATH"] == "/bin" and "LAB_SKIP_PERF" not in timed
    for lab_id in ("12_multi_gpu_allreduce", "no_such_lab", None):  # CUDA's default
        assert VARIABLE not in checker_run.checker_env(shell, perf=True, lab_id=lab_id)
    untimed = checker_run.checker_env(shell, perf=False, lab_id="07")
    assert untimed[VARIABLE] == "4" and untimed["LAB_SKIP_PERF"] == "1"
    assert shell == {VARIABLE: "4", "PATH": "/bin"}  # the caller's dict is left alone
