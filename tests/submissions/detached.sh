#!/usr/bin/env bash
# A measurement longer than one device call (10 minutes at most): issue 16's
# 11-lab class takes a worker one student's 11 labs in a row, so its complete
# rate needs a span of about 1,000 s. The device kills what a command leaves
# running when it returns, except a process in a session of its own (setsid),
# which runs on while the machine stays warm (30 s between calls at most);
# $OUT is emptied before each call. So the first call starts the run in a
# session of its own, writing to DIR outside $OUT, and waits; the calls after
# it wait on, each copying DIR into $OUT as one archive.
#
# usage: detached.sh start DIR COMMAND...   runs COMMAND (in the repository) in a new
#                                           session: DIR/console.txt, DIR/pid, DIR/rc
#        detached.sh wait DIR SECONDS OUT   waits up to SECONDS for it; once it has
#                                           OUT/detached.tgz holds DIR as it is
#                                           then; exit 0 when ended, 3 while it
#                                           still runs
#
# e.g. call 1: bash tests/submissions/detached.sh start /tmp/i16 env OUT=/tmp/i16/r \
#                PARTS=new LABS=course COPIES=6 JOBS=16 SHARED_CALL=10 THROUGHPUT_S=1100 \
#                bash tests/submissions/issue16_gpu.sh
#              bash tests/submissions/detached.sh wait /tmp/i16 560 "$OUT"
#      call 2 (within 30 s): bash tests/submissions/detached.sh wait /tmp/i16 590 "$OUT"
#
# Each call copies the tree again, and an ignored folder carried by the first
# call (bwrap, for the sandbox) is gone from the second on unless that call
# names it too: a run of 87b7298 lost bwrap mid-way, and its sandboxed batch
# graded nobody (tests/gpu_runs/h100x2/attacks-87b7298-log.txt). Name the same
# carry on every call of a run.
set -u
what=${1:?start or wait}
dir=${2:?a folder outside \$OUT}
shift 2
case "$what" in
  start)
    if [[ -e "$dir/pid" ]] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
      echo "detached: a run is already going in $dir (pid $(cat "$dir/pid"))" >&2
      exit 2
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    # The exit status lands in DIR/rc once it has ended: a run that ended is told
    # from one that was killed (no rc) by that file. It holds none of this
    # command's descriptors: the call that started it must be able to return.
    setsid bash -c '"$@"; echo $? > "$0/rc"' "$dir" "$@" < /dev/null > "$dir/console.txt" 2>&1 &
    echo $! > "$dir/pid"
    echo "detached: started pid $(cat "$dir/pid") at $(date -u +%T), writing $dir"
    ;;
  wait)
    seconds=${1:?seconds}
    out=${2:?OUT}
    [[ -e "$dir/pid" ]] || { echo "detached: nothing started in $dir" >&2; exit 2; }
    pid=$(cat "$dir/pid")
    end=$((SECONDS + seconds))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < end)); do sleep 2; done
    tail -5 "$dir/console.txt" 2>/dev/null
    # What it has written so far comes back on every call: should the machine
    # go back before the next call (30 s idle), the figures already measured
    # are not lost with it. tar may find a file growing as it reads: that copy
    # is partial, the next one whole.
    mkdir -p "$out"
    tar -C "$(dirname "$dir")" -czf "$out/detached.tgz" "$(basename "$dir")" 2>/dev/null
    if kill -0 "$pid" 2>/dev/null; then
      echo "detached: still running after $seconds s (pid $pid): wait again within 30 s; so far in $out/detached.tgz"
      exit 3
    fi
    echo "detached: ended with rc $(cat "$dir/rc" 2>/dev/null || echo '? (killed)'); $out/detached.tgz"
    ;;
  *)
    echo "usage: detached.sh start DIR COMMAND... | wait DIR SECONDS OUT" >&2
    exit 2
    ;;
esac
