"""The environment of a lab's checker runs (the checker passes it on to the
runner, tests/support/runner_link.cpp): a run that shares a GPU with other
students' waits for it asleep and may open fewer queues; a run that times
keeps CUDA's defaults."""

from __future__ import annotations

import os

from .. import labmeta

CONNECTIONS = "CUDA_DEVICE_MAX_CONNECTIONS"


def default_queues(env: dict[str, str] | None) -> dict[str, str] | None:
    """`env` (None: the grader's own) without CUDA_DEVICE_MAX_CONNECTIONS, which
    only batch --gpu-connections sets, and only for runs that share a GPU: a
    timed run measures with CUDA's default queues whatever the instructor's
    shell exported. `env` itself where it lacks the variable."""
    base = env if env is not None else os.environ
    if CONNECTIONS not in base:
        return env
    return {k: v for k, v in base.items() if k != CONNECTIONS}


def sharing(
    env: dict[str, str] | None, lab: labmeta.Lab, shared: bool, gpu_connections: int | None
) -> dict[str, str] | None:
    """The environment of `lab`'s untimed runs, from `env` (default_queues'):
    sharing the GPU (`shared`), their processes sleep while they wait for it
    rather than spin a core each (tests/support/cuda_health.hpp), and with
    batch --gpu-connections their contexts open that many queues (the driver
    creates one context at a time for the whole machine, and fewer queues make
    each creation shorter: tests/gpu_runs/h100/context-probe-7d20d53.*), except
    a lab whose calls span GPUs, whose kernels wait on each other's flags."""
    if not (shared and lab.needs_gpu):
        return env
    untimed = dict(env if env is not None else os.environ, LAB_GPU_WAIT="block")
    if gpu_connections and not lab.spans_gpus:
        untimed[CONNECTIONS] = str(gpu_connections)
    return untimed
