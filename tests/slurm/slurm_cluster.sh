#!/usr/bin/env bash
# A throw-away single-node Slurm cluster for the launcher tests: slurmctld and slurmd of
# Debian's slurm-wlm on loopback, no munge (auth/none, cred/none), no cgroups, no database;
# configuration, state, spool, logs and pid files all in DIR.
#   slurm_cluster.sh start DIR   writes DIR/slurm.conf, starts both daemons, waits for the
#                                node to be idle; clients then need SLURM_CONF=DIR/slurm.conf
#   slurm_cluster.sh stop DIR    stops the two daemons by their pids (DIR/*.pid)
# Exit codes of start: 0 running, 77 Slurm is missing or slurmctld/slurmd cannot start here
# (the reason and the daemon logs are printed), 2 bad usage.
# Job states stay queryable with `scontrol show job` for an hour (MinJobAge) and every
# finished job is also appended to DIR/jobcomp.txt (jobcomp/filetxt), as there is no slurmdbd
# for sacct.
set -euo pipefail
export PATH=$PATH:/usr/sbin   # the daemons live in /usr/sbin, not on a user's PATH

usage() { sed -n '2,11p' "$0" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)

# A free TCP port on loopback (the kernel picks it; the tiny race is acceptable in tests).
free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

write_conf() {
  local host user cpus
  host=$(hostname -s)
  user=$(id -un)
  # At least 2 CPUs so that a 2-rank job fits on a 1-core runner (config_overrides lets
  # slurmd accept a node description that differs from the hardware).
  cpus=$(nproc); [ "$cpus" -ge 2 ] || cpus=2
  mkdir -p "$dir/state" "$dir/spool" "$dir/log"
  : > "$dir/plugstack.conf"
  cat > "$dir/slurm.conf" <<CONF
# Written by tests/slurm/slurm_cluster.sh: a single-node test cluster.
ClusterName=tpuperftest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/none
CredType=cred/none
SlurmUser=$user
SlurmdUser=$user
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pidfile
SlurmdPidFile=$dir/slurmd.pidfile
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
PlugStackConfig=$dir/plugstack.conf
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
MinJobAge=3600
# Refuse at submission what the partition can never run (as production clusters do),
# instead of leaving it pending forever.
EnforcePartLimits=ALL
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
}

fail_start() {
  echo "slurm_cluster: $1" >&2
  for f in "$dir"/log/*.log "$dir"/*.out; do
    [ -s "$f" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }
  done
  stop_daemons
  exit 77
}

# slurmctld/slurmd in the foreground (-D) as background jobs of this shell: $! is the
# daemon itself, so stop can kill exactly that pid.
start_daemons() {
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -D -f "$SLURM_CONF" > "$dir/slurmctld.out" 2>&1 &
  echo $! > "$dir/slurmctld.pid"
  local i
  for i in $(seq 1 50); do
    scontrol ping 2>/dev/null | grep -q 'is UP' && break
    kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null || fail_start "slurmctld exited at start"
    sleep 0.2
  done
  scontrol ping 2>/dev/null | grep -q 'is UP' || fail_start "slurmctld did not answer within 10 s"
  slurmd -D -f "$SLURM_CONF" > "$dir/slurmd.out" 2>&1 &
  echo $! > "$dir/slurmd.pid"
  for i in $(seq 1 100); do
    sinfo -h -o '%T' 2>/dev/null | grep -qx 'idle' && return 0
    kill -0 "$(cat "$dir/slurmd.pid")" 2>/dev/null || fail_start "slurmd exited at start"
    sleep 0.2
  done
  fail_start "the node did not become idle within 20 s ($(sinfo -h -o '%T %E' 2>&1))"
}

# TERM first; KILL whatever is still there after 10 s.
stop_daemons() {
  local name pid i
  for name in slurmd slurmctld; do
    [ -f "$dir/$name.pid" ] || continue
    pid=$(cat "$dir/$name.pid")
    kill "$pid" 2>/dev/null || { rm -f "$dir/$name.pid"; continue; }
    for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/$name.pid"
  done
}

case "$cmd" in
  start)
    for t in slurmctld slurmd sbatch scontrol sinfo; do
      command -v "$t" > /dev/null || { echo "slurm_cluster: $t not found (install slurm-wlm: jobs/setup.sh)" >&2; exit 77; }
    done
    write_conf
    start_daemons
    echo "slurm_cluster: up (SLURM_CONF=$dir/slurm.conf, node $(hostname -s))" ;;
  stop) stop_daemons ;;
  *) usage ;;
esac
