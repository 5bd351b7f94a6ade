"""The environment of a lab's runs that share a GPU with other students' (the
checker passes it on to the runner, tests/support/runner_link.cpp): they wait
for it asleep and may open fewer queues. A run that times has the queues
checker_run.checker_env gives it."""

from __future__ import annotations

import os

from .. import labmeta
from .checker_run import CONNECTIONS


def sharing(
    env: dict[str, str] | None, lab: labmeta.Lab, shared: bool, gpu_connections: int | None
) -> dict[str, str] | None:
    """The environment of `lab`'s untimed runs, from `env` (None: the grader's
    own): sharing the GPU (`shared`), their processes sleep while they wait for
    it rather than spin a core each (tests/support/cuda_health.hpp), and their
    contexts open the queues batch --gpu-connections says, and only that
    option (the batch's fingerprint records it, not the instructor's shell):
    the driver creates one context at a time for the whole machine, and fewer
    queues make each creation shorter (see docs/decisions.md, "One queue per
    context for the runs that share a GPU"). Never for a lab whose calls span GPUs, whose
    kernels wait on each other's flags."""
    if not (shared and lab.needs_gpu):
        return env
    untimed = dict(env if env is not None else os.environ, LAB_GPU_WAIT="block")
    untimed.pop(CONNECTIONS, None)
    if gpu_connections and not lab.spans_gpus:
        untimed[CONNECTIONS] = str(gpu_connections)
    return untimed
