#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the grader's Slurm test
# (grader/tests/test_slurm.py), and bubblewrap for the sandbox tests.
#
# Installs munge, slurmctld, slurmd and the Slurm client from Debian's
# packages, writes /etc/slurm/slurm.conf for one node (this host, all its CPUs,
# no GPU, no accounting database), and starts munged, slurmctld and slurmd
# without systemd. Safe to run again: daemons already up are left alone.
# Needs root (or sudo). Exits 0 with a message, never failing CI, when
# something cannot be set up: the tests then skip and say why.
#
# `slurm_localhost.sh stop` stops the daemons this script started (their names
# are kept in $STARTED), and only those: a machine's own Slurm stays up.
set -uo pipefail

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
say() { echo "slurm_localhost: $*"; }
STARTED=${SLURM_LOCALHOST_STARTED:-/tmp/slurm_localhost.started}
started() { echo "$1" >> "$STARTED"; }

if [ "${1:-}" = stop ]; then
  [ -f "$STARTED" ] || exit 0
  # The order matters: slurmd and slurmctld authenticate through munged.
  for prog in slurmd slurmctld munged; do
    if grep -qx "$prog" "$STARTED"; then
      as_root pkill -x "$prog" 2>/dev/null
      for _ in $(seq 20); do pgrep -x "$prog" >/dev/null || break; sleep 0.25; done
      pgrep -x "$prog" >/dev/null && as_root pkill -9 -x "$prog" 2>/dev/null
      say "stopped $prog"
    fi
  done
  rm -f "$STARTED"
  exit 0
fi

if command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  need=()
  for pkg in bubblewrap munge slurmctld slurmd slurm-client; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
  if [ ${#need[@]} -gt 0 ]; then
    { as_root apt-get update -qq && as_root apt-get install -y -qq --no-install-recommends "${need[@]}"; } \
      >/tmp/slurm_localhost-apt.log 2>&1 ||
      { say "apt-get could not install ${need[*]} (see /tmp/slurm_localhost-apt.log)"; exit 0; }
  fi
fi
for prog in munged slurmctld slurmd sbatch; do
  command -v "$prog" >/dev/null 2>&1 || [ -x "/usr/sbin/$prog" ] ||
    { say "$prog is not installed: the Slurm test will skip"; exit 0; }
done

node=$(hostname -s)
cpus=$(nproc)
# The node as slurmd sees it (sockets, cores, memory), so that it is not drained
# for a mismatch; a plain line when slurmd -C says nothing.
node_line=$(/usr/sbin/slurmd -C 2>/dev/null | grep '^NodeName=' | sed 's/ UpTime=.*//')
[ -n "$node_line" ] || node_line="NodeName=${node} CPUs=${cpus}"
node=$(echo "$node_line" | sed 's/^NodeName=\([^ ]*\).*/\1/')

# munge: the key (Debian's package makes one; make it if missing) and the daemon.
as_root install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
as_root install -d -o munge -g munge -m 0755 /run/munge
if [ ! -s /etc/munge/munge.key ]; then
  as_root sh -c 'dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null' &&
    as_root chown munge:munge /etc/munge/munge.key && as_root chmod 0400 /etc/munge/munge.key
fi
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
  as_root runuser -u munge -- /usr/sbin/munged --force ||
    { say "munged did not start"; exit 0; }
  started munged
  for _ in $(seq 20); do munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.5; done
fi

# slurm.conf: one node, one partition, cores as the consumable resource so that
# several one-CPU tasks run at once; no cgroups, no accounting storage.
as_root install -d -m 0755 /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
as_root tee /etc/slurm/slurm.conf >/dev/null <<EOF
# Written by .ci/slurm_localhost.sh: a one-node cluster for the grader's tests.
ClusterName=localhost
SlurmctldHost=${node}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
MaxArraySize=10001
${node_line} NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=${node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF

if pgrep -x slurmctld >/dev/null && pgrep -x slurmd >/dev/null; then
  as_root scontrol reconfigure >/dev/null 2>&1 || true   # running already: read the new conf
fi
if ! pgrep -x slurmctld >/dev/null; then
  as_root /usr/sbin/slurmctld -i || { say "slurmctld did not start (see /var/log/slurm/slurmctld.log)"; exit 0; }
  started slurmctld
fi
if ! pgrep -x slurmd >/dev/null; then
  as_root /usr/sbin/slurmd || { say "slurmd did not start (see /var/log/slurm/slurmd.log)"; exit 0; }
  started slurmd
fi

# Wait for the node to take jobs.
for _ in $(seq 60); do
  state=$(sinfo -h -n "$node" -o %t 2>/dev/null | head -1)
  case "$state" in
    idle*|mix*|alloc*) say "node ${node} is ${state}: Slurm is up (${cpus} CPUs)"; exit 0 ;;
    down*|drain*) as_root scontrol update NodeName="$node" State=RESUME >/dev/null 2>&1 ;;
  esac
  sleep 1
done
say "the node did not come up (state: ${state:-unknown}); see /var/log/slurm/"
exit 0
