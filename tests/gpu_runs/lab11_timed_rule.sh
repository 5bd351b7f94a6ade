#!/usr/bin/env bash
# Lab 11's timed rule on a GPU (FloatSumTraits::same_timed in
# tests/support/contracts.cuh): the reference solution graded with a run seed
# whose first timed batch sums a copy to near 0 (found on the CPU by
# `lab11-timed-sums search`, tests/tuning/lab11_timed_sums.cpp), once by the
# rule before (PATCH, the change's diff, reversed in a copy of the tree) and
# once by the rule now, each time every lab 11 test under `grade`. Before,
# NaiveSum's bandwidth test fails the reference with a wrong value; now every
# test passes.
#
# usage: OUT=DIR PATCH=FILE SEEDS="S1 S2 ..." [ARCH=sm_90] bash tests/gpu_runs/lab11_timed_rule.sh
set -u
: "${OUT:?set OUT to a folder}" "${PATCH:?the diff of the change}" "${SEEDS:?run seeds}"
ARCH=${ARCH:-sm_90}
repo=$(pwd)
mkdir -p "$OUT"
before=$(mktemp -d)
# The tree as it is, without build folders, then the change taken out.
tar -C "$repo" --exclude='./build*' --exclude='./.git' -cf - . | tar -C "$before" -xf -
(cd "$before" && patch -p1 -R < "$PATCH") > "$OUT/patch.txt" 2>&1 || {
  echo "lab11_timed_rule: the patch does not reverse: $OUT/patch.txt" >&2
  exit 2
}
for rule in before now; do
  tree=$repo
  [[ $rule == before ]] && tree=$before
  for seed in $SEEDS; do
    (cd "$tree" && python3 -m grader grade 11 --impl solutions --seed "$seed" --no-sanitize \
      --build-dir "build-rule-$ARCH" --json "$OUT/grade-$rule-$seed.json") \
      > "$OUT/grade-$rule-$seed.txt" 2>&1
    echo "rule $rule, seed $seed: grade exited $?"
    grep -iE "first failure|expected|/ *[0-9]+" "$OUT/grade-$rule-$seed.txt" | head -6
  done
done
rm -rf "$before"
