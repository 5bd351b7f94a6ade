#!/usr/bin/env bash
# What a session owes on a GPU, in one chain that detached.sh can carry over
# several device calls: each part writes under R as it goes, so a chain cut by
# the session's device time keeps what it measured. From the repository root,
# bubblewrap carried in .carry/ (the developers' guide says how):
#
#   call 1: bash tests/submissions/detached.sh start /tmp/ch env C=<full commit> \
#             P=labs,attacks,class1,class2 bash tests/gpu_runs/session_chain.sh
#           bash tests/submissions/detached.sh wait /tmp/ch 570 "$OUT"
#   call 2, 3 ... (each within 30 s of the last, each naming carry .carry):
#           bash tests/submissions/detached.sh wait /tmp/ch 590 "$OUT"
#
# Parts (P, run in the order below whatever order P names them; default
# labs,attacks,class1,class2):
#   study    what a run's start costs that is its runner's alone
#            (gpu_spread_study.py --passes 1,4, the start-only test, K = 1, 16,
#            32 runs at once): one checker and one runner a run, against one
#            checker and four runners one after another; how much of a start
#            a checker kept across a worker's labs would save. (At e1d94fb
#            the study of wrappings: the namespaces add nothing to the part
#            the machine serves one run at a time; h200x2/gpu-spread-study-*.)
#            (about 100 s)
#   labs     gpucheck --parts labs,suites: every reference passes, every
#            skeleton fails with not_implemented, the meson suites (about 215 s)
#   attacks  gpucheck --parts attacks --attack-labs 07,09, both usual modes
#            (about 300-340 s)
#   class1   issue 16's 11-lab class on the first GPU and half the cores
#            (ONE_GPU=1), --cpu-by-command (about 560 s with CLASS_S=540)
#   class2   the same class on every GPU and core: over class1, issue 16's
#            ratio (about 560 s)
#   class1off, class2off  the same two with --no-kept-checkers (a checker for
#            every untimed run, as before b254ff3): beside class1 and class2 in
#            one chain, what the kept checkers change (about 560 s each)
#   class1kt, class2kt  the same two with --keep-timed-checkers (the timed
#            turns borrow kept checkers too: half a turn's processes)
#   lab12    lab 12 on two GPUs or more (lab12_gpu.sh: bench, checker, skeleton,
#            mutants, grade 12), then its goals from the bench's JSON: the
#            reference at least 0.97 of the kernel-made copy from 2^26 to 2^30,
#            at least 1.10 times NCCL from 2^16 to 2^28 (about 150 s)
#   bench    gpucheck --parts bench on the first GPU: every reference beside
#            CUB and its launch floor (about 200 s with its build)
#   predict  lab 04 solved, with a prediction in its ANSWERS.md: `grade 04`
#            prints the prediction beside the measurement (give it last)
#   class1d, class2d  the class an instructor's first day grades: STUDENTS
#            (default 32) of class.toml's copies with all 11 labs, batch's
#            default options (the batch picks its workers; --timeout 600), run
#            to the end (no deadline short of CLASS_S, default 900): on the
#            first GPU and half the cores, and on every GPU and core; with
#            PREV (a clone of an earlier commit carried beside the tree, e.g.
#            .prev) the same class graded by that grader after it, in the same
#            call: today's figure beside the one it replaces
# C: the commit the tree is (the machine's .git may lag); R: where results go
# (default /tmp/ch/r); CLASS_S: each class part's span (default 540); JOBS:
# workers a GPU in the class parts (default 16; at 80edc82 one H200's 16
# workers left its cores 51% busy and the GPU 52% used); PLACES: the batch's
# compute-sanitizer places (default: a quarter of the cores; there a lab's
# memcheck waited a median 5.7 s to start; the same count on one GPU and on
# all, so compare one part with another only at equal PLACES).
set -u
: "${C:?the full commit the tree is}"
export LAB_GIT_COMMIT=$C PATH=$PWD/.carry/bin:$PATH LD_LIBRARY_PATH=$PWD/.carry/lib
R=${R:-/tmp/ch/r}
P=${P:-labs,attacks,class1,class2}
mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nproc
has() { [[ ",$P," == *",$1,"* ]]; }
if has study; then
  t=$SECONDS
  python3 tests/submissions/gpu_spread_study.py "$R/study-passes" --arch sm_90 --ks 1,16,32 \
    --rounds 1 --tests 'start=*EmptyInputGivesIdentity' --wraps contained --passes 1,4 \
    --envs 'CUDA_DEVICE_MAX_CONNECTIONS=1' > "$R/study-passes-log.txt" 2>&1
  echo "study rc $? in $((SECONDS - t)) s"
  cat "$R/study-passes-log.txt"
fi
if has labs; then
  t=$SECONDS
  parts=labs,suites
  has bench && [[ $(nvidia-smi -L | wc -l) == 1 ]] && parts=labs,suites,bench  # one build for both
  python3 -m grader gpucheck --out "$R/labs" --arch sm_90 --parts $parts > "$R/labs-log.txt" 2>&1
  echo "$parts rc $? in $((SECONDS - t)) s"
  tail -40 "$R/labs-log.txt"
fi
if has lab12; then
  t=$SECONDS
  OUT="$R/lab12" bash tests/gpu_runs/lab12_gpu.sh > "$R/lab12-console.txt" 2>&1
  echo "lab12 rc $? in $((SECONDS - t)) s"
  python3 tests/gpu_runs/lab12_goals.py "$R"/lab12/lab12-bench-*.json | tee "$R/lab12-goals.txt"
fi
if has bench && [[ ${parts:-} != *bench* ]]; then
  t=$SECONDS
  CUDA_VISIBLE_DEVICES=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1) \
    python3 -m grader gpucheck --out "$R/bench" --arch sm_90 --parts bench > "$R/bench-log.txt" 2>&1
  echo "bench rc $? in $((SECONDS - t)) s"
  tail -30 "$R/bench-log.txt"
fi
for part in class1d class2d; do
  has "$part" || continue
  t=$SECONDS
  one=''
  # One GPU and half the cores only where the machine has more (on a machine of
  # one GPU, class1d is the whole machine).
  [[ $part == class1* ]] && (($(nvidia-smi -L | wc -l) > 1)) && one=1
  env OUT="$R/$part" PARTS=new${PREV:+,prev} LABS=course COPIES=4 STUDENTS="${STUDENTS:-32}" JOBS=auto \
    TIMEOUT=600 THROUGHPUT_S="${CLASS_S:-900}" ${one:+ONE_GPU=1} ${PREV:+PREV=$PREV} \
    ${PREV_NAME:+PREV_NAME=$PREV_NAME} \
    bash tests/submissions/issue16_gpu.sh > "$R/$part-console.txt" 2>&1
  echo "$part rc $? in $((SECONDS - t)) s"
  tail -6 "$R/$part-console.txt"
done
if has predict; then
  # A student's prediction beside the measurement: lab 04 as a student who
  # solved it and predicted half the copy grades it. It edits labs/ in this
  # copy of the tree, so it goes last.
  kept=$(mktemp -d)
  cp -a labs/04_sequential_addressing "$kept/"
  cp solutions/04_sequential_addressing/reduce.cu labs/04_sequential_addressing/reduce.cu
  sed -i 's/^Prediction (fraction_of_copy): *$/Prediction (fraction_of_copy): 0.5/' \
    labs/04_sequential_addressing/ANSWERS.md
  python3 -m grader grade 04 --json "$R/predict-grade.json" > "$R/predict-grade.txt" 2>&1
  echo "predict rc $?"
  tail -12 "$R/predict-grade.txt"
  rm -rf labs/04_sequential_addressing && cp -a "$kept/04_sequential_addressing" labs/
fi
if has attacks; then
  t=$SECONDS
  python3 -m grader gpucheck --out "$R/att" --arch sm_90 --parts attacks --attack-labs "${ATTACK_LABS:-07,09}" \
    > "$R/att-log.txt" 2>&1
  echo "attacks rc $? in $((SECONDS - t)) s"
  tail -8 "$R/att-log.txt"
fi
for part in class1 class2 class1off class2off class1kt class2kt; do
  has "$part" || continue
  t=$SECONDS
  one='' off='' kt=''
  [[ $part == class1* ]] && one=1
  [[ $part == *off ]] && off=1
  [[ $part == *kt ]] && kt=1
  env OUT="$R/$part" PARTS=new LABS=course COPIES=10 JOBS="${JOBS:-16}" SHARED_CALL=10 \
    THROUGHPUT_S="${CLASS_S:-540}" CPU_BY_COMMAND=1 ${one:+ONE_GPU=1} ${PLACES:+PLACES=$PLACES} \
    ${off:+NO_KEPT=1} ${kt:+KEEP_TIMED=1} bash tests/submissions/issue16_gpu.sh > "$R/$part-console.txt" 2>&1
  echo "$part rc $? in $((SECONDS - t)) s"
  tail -6 "$R/$part-console.txt"
done
