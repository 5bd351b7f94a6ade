#!/usr/bin/env bash
# Lab 12's reference with one constant changed, benched beside the unchanged
# one: each variant is a copy of solutions/12_multi_gpu_allreduce/allreduce.cu
# with one sed expression applied, built with nvcc alone (NCCL from the wheel)
# and run at a few sizes. On a machine with two GPUs or more, from the root:
#
#   OUT=DIR SIZES=20,24,28,30 bash tests/tuning/lab12_variants.sh 'NAME=SED' ...
#
# 'NAME=git:COMMIT' benches the reference as it was at COMMIT instead (the
# GPU machine's copy of .git may lack recent commits), 'NAME=file:PATH' a file.
#
# NVCC_EXTRA adds nvcc flags (say -lineinfo), RUN_PREFIX runs each bench under
# a tool (say compute-sanitizer). Writes DIR/variant-NAME.json (the bench's JSON) and prints ref algbw per size.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export NCCL_NVLS_ENABLE=0 PATH="/usr/local/cuda/bin:$PATH"
OUT=${OUT:-/tmp/lab12-variants}
SIZES=${SIZES:-20,24,28,30}
mkdir -p "$OUT"
nccl=$(python3 tests/allreduce/find_nccl.py) || nccl=""
[ -n "${NO_NCCL:-}" ] && nccl=""  # NO_NCCL=1: without it (say, under compute-sanitizer)
flags=(-O3 -std=c++17 -arch=sm_90 -Icommon -Itests/support -Itests/runner ${NVCC_EXTRA:-})
if [ -n "$nccl" ]; then
  flags+=(-DLAB_HAVE_NCCL=1 "-I$nccl/include" "-L$nccl/lib" -l:libnccl.so.2 "-Xlinker=-rpath,$nccl/lib")
else
  flags+=(-DLAB_HAVE_NCCL=0)
fi
build() { # NAME: builds $OUT/bench-NAME from $OUT/allreduce-NAME.cu
  nvcc "${flags[@]}" -Isolutions/12_multi_gpu_allreduce -o "$OUT/bench-$1" \
    tests/allreduce/bench_allreduce.cu "$OUT/allreduce-$1.cu" common/device_info.cu \
    common/bench_device.cu common/bench.cpp common/json.cpp >"$OUT/build-$1.txt" 2>&1
}
names=()
for spec in "base=" "$@"; do
  name=${spec%%=*}
  expr=${spec#*=}
  src="$OUT/allreduce-$name.cu"
  if [ "${expr#git:}" != "$expr" ]; then
    git show "${expr#git:}:solutions/12_multi_gpu_allreduce/allreduce.cu" >"$src" || continue
  elif [ "${expr#file:}" != "$expr" ]; then
    cp "${expr#file:}" "$src" || continue
  elif [ -n "$expr" ]; then
    sed "$expr" solutions/12_multi_gpu_allreduce/allreduce.cu >"$src"
    if cmp -s "$src" solutions/12_multi_gpu_allreduce/allreduce.cu; then
      echo "$name: the expression changed nothing"
      continue
    fi
  else
    cp solutions/12_multi_gpu_allreduce/allreduce.cu "$src"
  fi
  names+=("$name")
  build "$name" &
done
wait
for name in "${names[@]}"; do
  if [ ! -x "$OUT/bench-$name" ]; then
    echo "$name: build failed"
    tail -5 "$OUT/build-$name.txt"
    continue
  fi
  timeout 120 ${RUN_PREFIX:-} "$OUT/bench-$name" --sizes="$SIZES" --json="$OUT/variant-$name.json" >"$OUT/run-$name.txt" 2>&1 ||
    echo "$name: the bench failed: $(tail -3 "$OUT/run-$name.txt")"
  python3 - "$name" "$OUT/variant-$name.json" <<'PY'
import json, sys
try:
    run = json.load(open(sys.argv[2]))
except (OSError, ValueError):
    sys.exit(0)
cells = []
for s in run["sizes"]:
    m = s.get("methods", {})
    cells.append(f"2^{s['log2n']} {m.get('ref', {}).get('algbw_gbps', 0):.1f}"
                 f" (2s {m.get('ref_two_shot', {}).get('algbw_gbps', 0):.1f},"
                 f" nccl {m.get('nccl', {}).get('algbw_gbps', 0):.1f},"
                 f" copy {m.get('copy_one', {}).get('algbw_gbps', 0):.1f})")
print(f"{sys.argv[1]:>10}: " + "; ".join(cells))
PY
done
