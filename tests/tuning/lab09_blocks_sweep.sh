#!/bin/bash
# Lab 09's blocks per SM, with the one-launch finish (tests/gpu_runs/h200/
# lab09-blocks-sweep.txt): a copy of the working tree per setting, the
# solution's kBlocksPerSm edited, the sum's and max's benches built and run
# twice in turn. From the repository root on a GPU machine, OUT set.
set -u
source "$(dirname "$0")/variants.sh"
variants="4 3 2"
for b in $variants; do
  d=/tmp/s9_$b
  variant_tree $d
  f=$d/solutions/09_shuffle_vector_loads/reduce.cu
  sed -i "s/constexpr unsigned kBlocksPerSm = [0-9]*;/constexpr unsigned kBlocksPerSm = $b;/" $f
  grep -q "kBlocksPerSm = $b;" $f || echo "sed failed $b"
  build_variant $d $b tests/bench-09_shuffle_vector_loads-sum tests/bench-09_shuffle_vector_loads-max
done
wait
for rep in 1 2; do for b in $variants; do
  d=/tmp/s9_$b
  echo "== blocks/SM $b (round $rep)"
  $d/b/tests/bench-09_shuffle_vector_loads-max --sizes=20,22,24,26,28 --json=$OUT/sweep09_max_${b}_$rep.json | tail -5
  $d/b/tests/bench-09_shuffle_vector_loads-sum --sizes=22,24,26,28 --json=$OUT/sweep09_sum_${b}_$rep.json | tail -4
done; done
