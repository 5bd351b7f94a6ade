#!/usr/bin/env bash
# A student's session in a release, labs 02-04 from the handouts; every command
# and its output, as typed. Run from the course repository's root on the GPU
# machine: bash .carry/student/session.sh > transcript.txt 2>&1
set -u
STUDENT=$(cd "$(dirname "$0")" && pwd)
cd "$STUDENT/../release" || exit 1
say() { printf '\n$ %s\n' "$*"; "$@"; printf '[exit %s]\n' "$?"; }
note() { printf '\n# %s\n' "$*"; }
note "a fresh student release; first look: grade lab 02 as handed out"
say python3 -m grader grade 02
note "lab 02 written from its handout (the guided warm-up)"
cp "$STUDENT/02/reduce.cu" labs/02_interleaved/reduce.cu
say python3 -m grader grade 02
say python3 -m grader profile 02
note "lab 03 from its goal and traps; first try forgets the bounds check"
cp "$STUDENT/03a/reduce.cu" labs/03_strided_index/reduce.cu
say python3 -m grader grade 03
note "fixed: a thread past the end loads 0"
cp "$STUDENT/03/reduce.cu" labs/03_strided_index/reduce.cu
say python3 -m grader grade 03
say python3 -m grader profile 03
note "lab 04"
cp "$STUDENT/04/reduce.cu" labs/04_sequential_addressing/reduce.cu
say python3 -m grader grade 04
say python3 -m grader profile 04
