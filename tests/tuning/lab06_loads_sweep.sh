#!/bin/bash
# Lab 06's loads in flight per step (kLoads, in the fenced loop of the
# reference solution): 1, 2, 4 and 8, each a copy of the working tree with the
# constant edited, built and benchmarked beside CUB, two rounds in turn. The
# bytes-in-flight model of decks 05 and 06 predicts GB/s rising with it until
# the memory's limit. From the repository root on a GPU machine, OUT set.
set -u
variants="1 2 4 8"
for k in $variants; do
  d=/tmp/l6_$k; rm -rf $d; mkdir -p $d
  tar --exclude='./build*' --exclude=./.git --exclude=./.carry -cf - . | tar -xf - -C $d
  f=$d/solutions/06_grid_stride_shared/reduce.cu
  sed -i "s/constexpr int kLoads = [0-9]*;/constexpr int kLoads = $k;/" $f
  grep -q "kLoads = $k;" $f || echo "sed failed $k"
  (cd $d && meson setup b -Dgpu_arch=sm_90 -Dmutants=disabled -Dslides=disabled >/dev/null 2>&1 &&
   ninja -C b tests/bench-06_grid_stride_shared >/dev/null 2>&1 && echo built $k || echo BUILD FAILED $k) &
done
wait
for rep in 1 2; do for k in $variants; do
  echo "== kLoads $k (round $rep)"
  /tmp/l6_$k/b/tests/bench-06_grid_stride_shared --sizes=20,22,24,26,28,30 \
    --json=$OUT/lab06-loads-$k-$rep.json | tail -6
done; done
