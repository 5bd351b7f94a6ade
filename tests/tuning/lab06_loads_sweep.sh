#!/bin/bash
# Lab 06's loads in flight per step (kLoads, in the fenced loop of the
# reference solution): 1, 2, 4 and 8, each a copy of the working tree with the
# constant edited, built and benchmarked beside CUB, two rounds in turn. The
# bytes-in-flight model of decks 05 and 06 predicts GB/s rising with it until
# the memory's limit. From the repository root on a GPU machine, OUT set.
set -u
source "$(dirname "$0")/variants.sh"
variants="1 2 4 8"
for k in $variants; do
  d=/tmp/l6_$k
  variant_tree $d
  f=$d/solutions/06_grid_stride_shared/reduce.cu
  sed -i "s/constexpr int kLoads = [0-9]*;/constexpr int kLoads = $k;/" $f
  grep -q "kLoads = $k;" $f || echo "sed failed $k"
  build_variant $d $k tests/bench-06_grid_stride_shared
done
wait
for rep in 1 2; do for k in $variants; do
  echo "== kLoads $k (round $rep)"
  /tmp/l6_$k/b/tests/bench-06_grid_stride_shared --sizes=20,22,24,26,28,30 \
    --json=$OUT/lab06-loads-$k-$rep.json | tail -6
done; done
