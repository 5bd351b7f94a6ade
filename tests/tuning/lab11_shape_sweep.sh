#!/bin/bash
# Lab 11's shape sweep (tests/gpu_runs/h200/lab11-shape-sweep.txt): threads per
# block, blocks per SM in the grid, min blocks in __launch_bounds__. Each shape
# is a copy of the working tree with the solution's constants edited, built
# and benchmarked against CUB. Run from the repository root on a GPU machine,
# with OUT set to a folder for the JSON.
set -u
source "$(dirname "$0")/variants.sh"
variants="1024:4:2 1024:2:2 512:4:4 512:8:4 256:8:8 256:16:8"
for v in $variants; do
  IFS=: read t b m <<< "$v"
  d=/tmp/sw_${t}_${b}_${m}
  variant_tree $d
  f=$d/solutions/11_accurate_float_sum/reduce.cu
  sed -i "s/constexpr unsigned kVecThreads = [0-9]*;/constexpr unsigned kVecThreads = $t;/; s/constexpr unsigned kVecBlocksPerSm = [0-9]*;/constexpr unsigned kVecBlocksPerSm = $b;/; s/__launch_bounds__(kVecThreads, [0-9]*)/__launch_bounds__(kVecThreads, $m)/" $f
  grep -q "kVecThreads = $t;" $f || echo "sed failed $v"
  build_variant $d $v tests/bench-11_accurate_float_sum
done
wait
for v in $variants; do
  IFS=: read t b m <<< "$v"
  d=/tmp/sw_${t}_${b}_${m}
  echo "== threads $t blocks/SM $b minblocks $m"
  $d/b/tests/bench-11_accurate_float_sum --sizes=20,22,24,26,28 --json=$OUT/sweep11_${t}_${b}_${m}.json | tail -5
done
