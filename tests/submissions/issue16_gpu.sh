#!/usr/bin/env bash
# Issue 16 on a GPU machine, in one call: compute-sanitizer several at once
# (sanitizer_study.py: the runner as the grader wraps it, with a network
# namespace of its own, against the old wrapping), then the class of
# class.toml COPIES times over graded by `batch` with JOBS students per GPU
# (throughput.py, GRADER_TRACE on). Everything lands in $OUT as it is made,
# so a run cut by the call's limit keeps what it measured.
#
# usage: OUT=DIR [ARCH=sm_90] [COPIES=3] [JOBS=4] [STUDY_S=120] [THROUGHPUT_S=360] \
#        bash tests/submissions/issue16_gpu.sh
set -u
: "${OUT:?set OUT to a folder}"
ARCH=${ARCH:-sm_90}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
nproc | tee -a "$OUT/gpu.txt"
python3 tests/submissions/sanitizer_study.py "$OUT" --arch "$ARCH" \
  --labs 04_sequential_addressing,09_shuffle_vector_loads --ks 2,4,8 \
  --deadline "${STUDY_S:-120}" 2>&1 | tee "$OUT/sanitizer-study.log"
name="new-j${JOBS:-4}-x${COPIES:-3}"
GRADER_TRACE=1 timeout "${THROUGHPUT_S:-360}" python3 tests/submissions/throughput.py "$OUT" "$name" \
  --arch "$ARCH" --timeout 60 --copies "${COPIES:-3}" -- --jobs-per-gpu "${JOBS:-4}"
echo "throughput exit $?"
grep -E "^\[batch\]" "$OUT/throughput-$name.log" | tail -4
