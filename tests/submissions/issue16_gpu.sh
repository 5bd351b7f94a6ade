#!/usr/bin/env bash
# Issue 16 on a GPU machine, in one call. Everything lands in $OUT as it is
# made, so a run cut by the call's limit keeps what it measured.
#
# PARTS (comma-separated, in this order):
#   study  compute-sanitizer several at once (sanitizer_study.py: the runner as
#          the grader wraps it, with a network namespace of its own, against
#          the old wrapping); about 150 s with its build
#   load   each lab's reference timed quiet, beside every core busy at its own
#          priority, and beside the same load as a batch starts its background
#          work (cpu_load_study.py, LOAD_ROUNDS rounds, default 2); about 4 min
#   new    the class of class.toml COPIES times over graded by this grader's
#          `batch` with JOBS students per GPU (throughput.py, GRADER_TRACE on)
#   spread what a shared test run waits for: K runs of lab 04's tests at once,
#          on the first GPU or spread over all (gpu_spread_study.py: the untimed
#          tests and the start alone, with CUDA's 8 queues a context and with 1,
#          batch --gpu-connections 1); about 3 min
#   old    the same class graded by 7a9c4bb's grader (a `git archive` of it,
#          one student per GPU, as it was), the figure issue 16 compares with
#   prev   the same class, with the options of `new`, graded by the grader in
#          PREV (a clean checkout of an earlier commit carried beside the tree:
#          `git archive` of a commit with .gitattributes leaves solutions/
#          out), named after PREV_NAME (default: the folder's name): a change
#          against the grader before it, on one machine
#
# Each throughput part stops its batch after THROUGHPUT_S seconds (OLD_S for
# the old grader) and measures what it graded by then (throughput.py --deadline).
# Its steady rate leaves out drains that had not come by then, and its
# complete rate counts only students done: for a figure to read issue 16's goal
# against, give THROUGHPUT_S=540 (a device call of 600 s leaves room for little more), so that
# the span holds many drains (tests/gpu_runs/README.md says why). LABS=course's
# complete rate needs about 1,000 s (one worker grades a student's 11 labs in a
# row): run this script through detached.sh, over two calls.
#
# GPU_RUNS=N passes --gpu-runs N to the new grader's batch (its default otherwise),
# SHARED_CALL=S passes --shared-call-timeout S (a call's limit while sharing).
# CONNECTIONS=N passes --gpu-connections N (CUDA_DEVICE_MAX_CONNECTIONS of the
# runs that share a GPU; the batch's default is 1, and 8 is CUDA's own), the
# names ending in -gN.
# LABS=course grades every lab one GPU grades (issue 16's 11: class.toml's
# students, each lab their mistakes leave alone expected as its base), LABS=IDS
# those named; the names ending in -lLABS. Default: class.toml's four.
# PLACES=N passes --sanitizer-places N (compute-sanitizer runs at once; the
# batch's default is a quarter of the cores), the names ending in -pN.
# NO_KEPT=1 passes --no-kept-checkers (a checker for every untimed run, as
# before b254ff3), the names ending in -nokept.
# KEEP_TIMED=1 passes --keep-timed-checkers (a GPU's timed turns borrow kept
# checkers), the names ending in -kt.
# JOBS=auto passes no --jobs-per-gpu (the batch decides); STUDENTS=N grades the
# first N of the copies, the names ending in -sN; TIMEOUT=S is --timeout (60).
# SANDBOX=1 passes --sandbox (every student in a bubblewrap cell of its own:
# bwrap on PATH), the names ending in -sandbox.
# CPU_BY_COMMAND=1 passes --cpu-by-command to throughput.py (the core-seconds
# each program spent over the steady span: cpu_by_command.py), the names
# ending in -cpu.
# ONE_GPU=1 grades on the machine's first GPU and its first half of the cores
# only (CUDA_VISIBLE_DEVICES and taskset), the names ending in -1gpu: issue 16's
# two-GPU ratio is a run without it over a run with it, on the same host, with
# the same grader and class (each THROUGHPUT_S=300 at least: on two GPUs the
# first labs are graded about 100 s in).
#
# usage: OUT=DIR [PARTS=study,load,new,prev,spread,old] [PREV=DIR] [PREV_NAME=NAME] [LABS=course] [ARCH=sm_90] [COPIES=3] [JOBS=8] [GPU_RUNS=N] [SHARED_CALL=S] [CONNECTIONS=N] [PLACES=N] [NO_KEPT=1] [KEEP_TIMED=1] [SANDBOX=1] [ONE_GPU=1] [CPU_BY_COMMAND=1]
#        [STUDY_S=120] [LOAD_ROUNDS=2] [THROUGHPUT_S=360] [OLD_COPIES=COPIES] [OLD_S=THROUGHPUT_S]
#        bash tests/submissions/issue16_gpu.sh
set -u
: "${OUT:?set OUT to a folder}"
ARCH=${ARCH:-sm_90}
PARTS=${PARTS:-study,new}
COPIES=${COPIES:-3}
JOBS=${JOBS:-8}
mkdir -p "$OUT"
pin=()
if [[ -n "${ONE_GPU:-}" ]]; then
  CUDA_VISIBLE_DEVICES=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
  export CUDA_VISIBLE_DEVICES
  last_core=$(($(nproc) / 2 - 1))
  pin=(taskset -c "0-$last_core")
  echo "one GPU ($CUDA_VISIBLE_DEVICES) and cores 0-$last_core" | tee "$OUT/one-gpu.txt"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
nproc | tee -a "$OUT/gpu.txt"
echo "${LAB_GIT_COMMIT:-$(git rev-parse HEAD 2>/dev/null)}" | tee -a "$OUT/gpu.txt"  # the device copy's .git may lag
has() { [[ ",$PARTS," == *",$1,"* ]]; }
# A grader stopped at its deadline must leave nothing on the GPU: say what it
# left, and kill it, so that it cannot slow what this call measures next.
# (7a9c4bb's grader once left a checker spinning on the class's endless loop,
# and the bench after it measured half: tests/gpu_runs/README.md, bench-6ef3cb7.)
strays() {
  local left
  left=$(nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader)
  if [[ -n "$left" ]]; then
    echo "STRAY GPU PROCESSES after $1: $left" | tee -a "$OUT/strays.txt"
    for p in $(nvidia-smi --query-compute-apps=pid --format=csv,noheader); do kill -9 "$p"; done
  else
    echo "no GPU process left after $1"
  fi
}

if has study; then
  python3 tests/submissions/sanitizer_study.py "$OUT" --arch "$ARCH" \
    --labs 04_sequential_addressing,09_shuffle_vector_loads --ks 2,4,8 \
    --deadline "${STUDY_S:-120}" 2>&1 | tee "$OUT/sanitizer-study.log"
fi
if has load; then
  python3 tests/submissions/cpu_load_study.py "$OUT" --arch "$ARCH" --rounds "${LOAD_ROUNDS:-2}" \
    2>&1 | tee "$OUT/cpu-load-study.log"
  strays load
fi
# JOBS=auto: batch's own choice of students per GPU (its default), no option.
jobs=(--jobs-per-gpu "$JOBS")
[[ $JOBS == auto ]] && jobs=()
if has new; then
  name="new-j$JOBS-x$COPIES${STUDENTS:+-s$STUDENTS}${GPU_RUNS:+-r$GPU_RUNS}${SHARED_CALL:+-c$SHARED_CALL}${CONNECTIONS:+-g$CONNECTIONS}${PLACES:+-p$PLACES}${NO_KEPT:+-nokept}${KEEP_TIMED:+-kt}${SANDBOX:+-sandbox}${ONE_GPU:+-1gpu}${LABS:+-l$LABS}${CPU_BY_COMMAND:+-cpu}"
  GRADER_TRACE=1 "${pin[@]}" python3 tests/submissions/throughput.py "$OUT" "$name" --arch "$ARCH" \
    ${CPU_BY_COMMAND:+--cpu-by-command} --timeout "${TIMEOUT:-60}" --copies "$COPIES" ${STUDENTS:+--students "$STUDENTS"} \
    --deadline "${THROUGHPUT_S:-360}" --labs "${LABS:-class}" -- ${jobs[@]+"${jobs[@]}"} \
    ${GPU_RUNS:+--gpu-runs "$GPU_RUNS"} ${SHARED_CALL:+--shared-call-timeout "$SHARED_CALL"} \
    ${CONNECTIONS:+--gpu-connections "$CONNECTIONS"} ${PLACES:+--sanitizer-places "$PLACES"} ${NO_KEPT:+--no-kept-checkers} \
    ${KEEP_TIMED:+--keep-timed-checkers} ${SANDBOX:+--sandbox}
  echo "throughput $name exit $?"
  grep -E "^\[batch\]" "$OUT/throughput-$name.log" | tail -3
  sleep 2
  strays "$name"
fi
if has prev; then
  : "${PREV:?set PREV to a checkout of the grader to compare with}"
  name="prev-${PREV_NAME:-$(basename "$PREV")}-j$JOBS-x$COPIES${STUDENTS:+-s$STUDENTS}${GPU_RUNS:+-r$GPU_RUNS}${SHARED_CALL:+-c$SHARED_CALL}${ONE_GPU:+-1gpu}${LABS:+-l$LABS}"
  GRADER_TRACE=1 "${pin[@]}" python3 tests/submissions/throughput.py "$OUT" "$name" --grader "$PREV" \
    --arch "$ARCH" --timeout "${TIMEOUT:-60}" --copies "$COPIES" ${STUDENTS:+--students "$STUDENTS"} \
    --deadline "${THROUGHPUT_S:-360}" --labs "${LABS:-class}" -- ${jobs[@]+"${jobs[@]}"} \
    ${GPU_RUNS:+--gpu-runs "$GPU_RUNS"} ${SHARED_CALL:+--shared-call-timeout "$SHARED_CALL"}
  echo "throughput $name exit $?"
  grep -E "^\[batch\]" "$OUT/throughput-$name.log" | tail -3
  sleep 2
  strays "$name"
fi
if has spread; then
  python3 tests/submissions/gpu_spread_study.py "$OUT" --arch "$ARCH" --ks 1,6,12 \
    --envs ";CUDA_DEVICE_MAX_CONNECTIONS=1" --tests "untimed=-*Bandwidth*;start=*EmptyInputGivesIdentity" \
    2>&1 | tee "$OUT/gpu-spread-study.log"
  strays spread
fi
if has old; then
  old=$(mktemp -d)
  git archive 7a9c4bb | tar -x -C "$old"
  name="old-7a9c4bb-x${OLD_COPIES:-$COPIES}"
  python3 tests/submissions/throughput.py "$OUT" "$name" --grader "$old" --arch "$ARCH" \
    --timeout 60 --copies "${OLD_COPIES:-$COPIES}" --deadline "${OLD_S:-${THROUGHPUT_S:-360}}"
  echo "throughput $name exit $?"
  grep -E "^\[batch\]" "$OUT/throughput-$name.log" | tail -3
  sleep 2
  strays "$name"
fi
