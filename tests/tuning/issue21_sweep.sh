#!/bin/bash
# Issue 21's sweep (tests/gpu_runs/h100/sweep-b20ecaa.txt): three copies of
# the working tree side by side in the folder of this script, each with
# subprojects/googletest-* added (the GPU machine cannot download it):
#   A  1895d37: the max's key and count in two words, an acq_rel fence;
#      lab 11 launched plainly;
#   B  A with Max::finish on one 64-bit word, the atomicAdd issued after
#      atomicMax has answered (the count it gives back added to its own 1);
#   C  b20ecaa: the same word, both atomics issued at once and the count given
#      back by a third one when needed; lab 11 as a programmatic dependent launch.
# It builds the benches in each (and C's lab 09 and 11 tests), runs the max,
# lab 11 and the sum benches two rounds in turn, then C's tests, the
# sanitizer through `grader grade`, and ncu on one max call of A and of C.
# From the repository root on the GPU machine: bash DIR/issue21_sweep.sh, OUT set.
set -u
R=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader
S="16,18,20,22,24,26,28,30"
B09="tests/bench-09_shuffle_vector_loads-sum tests/bench-09_shuffle_vector_loads-max"
B11=tests/bench-11_accurate_float_sum
T="tests/checker-gpu_float_sum tests/checker-gpu_sum_max"
for l in 09_shuffle_vector_loads 11_accurate_float_sum; do T="$T tests/$l-runner-labs tests/$l-runner-solutions"; done
for m in no_head tail_dropped shuffle_from_8 missing_syncthreads count_not_reset max_word_not_reset; do T="$T tests/mutants/09_shuffle_vector_loads-mutant-$m"; done
for m in kahan_without_compensation combine_drops_error double_rounded_early kahan_original_step; do T="$T tests/mutants/11_accurate_float_sum-mutant-$m"; done
build() {
  local d=$1; shift
  (cd $R/$d && meson setup b -Dgpu_arch=sm_90 -Dslides=disabled >$R/$d-setup.log 2>&1 &&
   ninja -C b -j7 "$@" >$R/$d-build.log 2>&1 && echo "built $d" ||
   { echo "BUILD FAILED $d"; tail -40 $R/$d-setup.log $R/$d-build.log; })
}
t0=$SECONDS
build A $B09 $B11 &
build B tests/bench-09_shuffle_vector_loads-max &
build C $B09 $B11 $T &
wait
echo "== build $((SECONDS-t0)) s"
mkdir -p /tmp/j
for r in 1 2; do
  for t in A B C; do echo "== max $t round $r"; $R/$t/b/tests/bench-09_shuffle_vector_loads-max --sizes=$S --json=/tmp/j/max_${t}_$r.json; done
  for t in A C; do echo "== lab11 $t round $r"; $R/$t/b/$B11 --sizes=20,22,24,26,28,30 --json=/tmp/j/k11_${t}_$r.json; done
  for t in A C; do echo "== sum $t round $r"; $R/$t/b/tests/bench-09_shuffle_vector_loads-sum --sizes=$S --json=/tmp/j/sum_${t}_$r.json; done
done
tar -C /tmp -cf $OUT/sweep-json.tar j
echo "== bench done $((SECONDS-t0)) s"
cd $R/C
names=""
for l in 09_shuffle_vector_loads 11_accurate_float_sum; do names="$names $l-solution $l-skeleton"; done
for m in no_head tail_dropped shuffle_from_8 missing_syncthreads count_not_reset max_word_not_reset; do names="$names 09_shuffle_vector_loads-mutant-$m"; done
for m in kahan_without_compensation combine_drops_error double_rounded_early kahan_original_step; do names="$names 11_accurate_float_sum-mutant-$m"; done
timeout 150 meson test -C b --no-rebuild --print-errorlogs $names 2>&1 | grep -v "^ *|" | tail -40
cp b/meson-logs/testlog.txt $OUT/testlog-C.txt 2>/dev/null
echo "== tests done $((SECONDS-t0)) s"
timeout 90 python3 -m grader grade 09 11 --impl solutions --build-dir b --no-perf --json $OUT/grade-C.json 2>&1 | tail -25
echo "== all done $((SECONDS-t0)) s"
for t in A C; do
  echo "== ncu max $t"
  timeout 60 ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__sass_inst_executed_op_global_atom.sum $R/$t/b/tests/bench-09_shuffle_vector_loads-max --profile=25 2>&1 | grep -E "vector_reduce|duration|inst_executed|dram__|atom" | head -8
done
echo "== end $((SECONDS-t0)) s"
