#!/usr/bin/env bash
# A real, single-host Slurm cluster for the tests and the demo, from Debian's
# packages (slurm-wlm 22.05, munge): one munged, one slurmctld and two slurmd
# "nodes" (node1, node2) on loopback, each with fake GPUs (character-device
# symlinks to /dev/null, which is all Slurm's gres/gpu plugin needs), no
# systemd. Every daemon is started here, tracked by the pid this script
# recorded, and stopped by that pid only; all state, spool, sockets, keys and
# logs live under one scratch directory.
#
#   eval "$(scripts/slurm-local.sh start)"   # start (idempotent); sets SLURM_CONF
#   scripts/slurm-local.sh status             # exit 0 when the cluster answers
#   scripts/slurm-local.sh stop               # stop what start started
#   scripts/slurm-local.sh env                # print the export line again
#
# start installs the packages when they are missing (apt-get; needs root or
# sudo), prints only `export ...` lines on stdout (everything else goes to
# stderr) and exits 3 when the cluster does not come up, with the daemons'
# last log lines. Settings (environment):
#   SLURM_LOCAL_DIR   scratch directory (default /tmp/trtmc-qual-slurm-<id>)
#   SLURM_LOCAL_PORT  slurmctld port; the nodes use PORT+1 and PORT+2
#                     (default 20000 + 3 x (<id> mod 5000))
# <id> is derived from this checkout's absolute path, so the cluster belongs
# to the checkout that starts it: two checkouts (or a benchmark beside a test
# run of another checkout) on one host each get their own daemons, state and
# ports, and never stop each other's. Set both to share one cluster.
#   SLURM_LOCAL_GPUS  fake GPUs per node (default 4)
#   SLURM_LOCAL_CPUS  CPUs per node (default 2)
# What had to be true for this to work is in docs/slurm.md ("The local cluster").
set -euo pipefail

checkout=$(cd "$(dirname "$0")/.." && pwd -P)
id=$(printf '%s' "$checkout" | sha256sum | cut -c1-8)
dir=${SLURM_LOCAL_DIR:-/tmp/trtmc-qual-slurm-$id}
port=${SLURM_LOCAL_PORT:-$((20000 + 3 * (16#$id % 5000)))}
gpus=${SLURM_LOCAL_GPUS:-4}
cpus=${SLURM_LOCAL_CPUS:-2}
nodes=(node1 node2)
conf=$dir/etc/slurm.conf
sock=$dir/munge/munge.socket

say() { echo "slurm-local: $*" >&2; }

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      echo sudo
      return 0
    fi
    say "not root and no sudo: the daemons must run as root (SlurmUser=root) and munged as user munge"
    exit 3
  fi
  echo ""
}

install() {
  local missing=()
  for b in munged munge unmunge slurmctld slurmd sbatch squeue scontrol scancel sinfo setpriv; do
    command -v "$b" >/dev/null 2>&1 || missing+=("$b")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing Debian's slurm-wlm and munge (missing: ${missing[*]})"
  local sudo
  sudo=$(need_root)
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
  for b in munged slurmctld slurmd sbatch; do
    if ! command -v "$b" >/dev/null 2>&1; then
      say "apt-get finished but $b is not on PATH"
      exit 3
    fi
  done
}

# launching NAME: NAME runs, or its recorded pid is still the launcher
# about to exec it. Right after start the pid runs setsid, then setpriv,
# and only then the daemon; on a loaded machine a start-up check can see
# those, and pidof_daemon alone then reported a healthy start as a failed
# one ("munged did not start"). A zombie is not running.
launching() {
  pidof_daemon "$1" >/dev/null && return 0
  local f=$dir/run/$1.pid pid exe
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ] || return 1
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
  [[ -z "$exe" || "$exe" == */setsid* || "$exe" == */setpriv* ]]
}

# pidof_daemon NAME: the recorded pid of NAME when that process still runs
# the program start launched (a recycled pid is not ours).
pidof_daemon() {
  local f=$dir/run/$1.pid pid exe
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
  case "$1" in
    munged) [[ "$exe" == */munged* ]] ;;
    slurmctld) [[ "$exe" == */slurmctld* ]] ;;
    slurmd-*) [[ "$exe" == */slurmd* ]] ;;
    *) return 1 ;;
  esac || return 1
  echo "$pid"
}

daemons() { echo munged slurmctld; for n in "${nodes[@]}"; do echo "slurmd-$n"; done; }

exports() { echo "export SLURM_CONF=$conf"; }

# healthy: every daemon runs, slurmctld answers and both nodes are usable.
healthy() {
  local d
  for d in $(daemons); do pidof_daemon "$d" >/dev/null || return 1; done
  SLURM_CONF=$conf scontrol ping 2>/dev/null | grep -q 'is UP' || return 1
  local states
  states=$(SLURM_CONF=$conf sinfo -h -N -o '%N %T' 2>/dev/null | sort -u) || return 1
  [ "$(echo "$states" | grep -cE ' (idle|mixed|allocated|completing)$')" -eq ${#nodes[@]} ]
}

write_config() {
  mkdir -p "$dir"/{etc,state,log,run,gpu} "$dir/spool"/{node1,node2}
  chmod 0755 "$dir"
  local i files
  for ((i = 0; i < gpus; i++)); do ln -sfn /dev/null "$dir/gpu/nvidia$i"; done
  files="$dir/gpu/nvidia[0-$((gpus - 1))]"
  cat >"$conf" <<EOF
# Written by scripts/slurm-local.sh; a single-host test cluster on loopback.
ClusterName=trtmc-local-$id
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.daemon.pid
SlurmdPidFile=$dir/run/slurmd-%n.daemon.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
MailProg=/bin/true
ReturnToService=2
MinJobAge=600
KillWait=20
NodeName=node1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((port + 1)) CPUs=$cpus RealMemory=2048 Gres=gpu:$gpus Features=cpu State=UNKNOWN
NodeName=node2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((port + 2)) CPUs=$cpus RealMemory=2048 Gres=gpu:$gpus Features=cpu State=UNKNOWN
PartitionName=debug Nodes=node[1-2] Default=YES MaxTime=INFINITE State=UP
EOF
  cat >"$dir/etc/gres.conf" <<EOF
NodeName=node[1-2] Name=gpu File=$files
EOF
}

start_munge() {
  mkdir -p "$dir/munge"
  chown munge:munge "$dir/munge"
  chmod 0755 "$dir/munge"  # munged wants the socket directory executable for all
  if [ ! -s "$dir/munge/munge.key" ]; then
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  fi
  chown munge:munge "$dir/munge/munge.key"
  chmod 0400 "$dir/munge/munge.key"
  rm -f "$sock" "$sock.lock"
  setsid setpriv --reuid=munge --regid=munge --init-groups \
    munged -F --socket="$sock" --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" \
    </dev/null >>"$dir/log/munged.out" 2>&1 &
  echo $! >"$dir/run/munged.pid"
  local i
  for ((i = 0; i < 100; i++)); do
    if munge -n -S "$sock" 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1; then return 0; fi
    launching munged || break
    sleep 0.1
  done
  return 1
}

start_slurm() {
  setsid slurmctld -D -c -f "$conf" </dev/null >>"$dir/log/slurmctld.out" 2>&1 &
  echo $! >"$dir/run/slurmctld.pid"
  local n
  for n in "${nodes[@]}"; do
    setsid slurmd -D -N "$n" -f "$conf" </dev/null >>"$dir/log/slurmd-$n.out" 2>&1 &
    echo $! >"$dir/run/slurmd-$n.pid"
  done
  local i
  for ((i = 0; i < 300; i++)); do
    if healthy; then return 0; fi
    for d in $(daemons); do launching "$d" || { say "$d exited during start-up"; return 1; }; done
    sleep 0.1
  done
  say "the cluster did not become ready within 30 s"
  return 1
}

logs() {
  local f
  for f in "$dir"/munge/munged.log "$dir"/log/*.log "$dir"/log/*.out; do
    [ -s "$f" ] || continue
    echo "--- $f (last lines)" >&2
    tail -n 8 "$f" >&2
  done
}

# stop_pids NAME...: SIGTERM to each recorded daemon, then wait (SIGKILL
# after 15 s) for all of them together.
stop_pids() {
  local d pid pids=() names=() i
  for d in "$@"; do
    if pid=$(pidof_daemon "$d"); then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
      names+=("$d")
    fi
    rm -f "$dir/run/$d.pid"
  done
  for ((i = 0; i < ${#pids[@]}; i++)); do
    local k
    for ((k = 0; k < 150; k++)); do
      [ -d "/proc/${pids[i]}" ] || break
      sleep 0.1
    done
    if [ -d "/proc/${pids[i]}" ]; then
      say "${names[i]} (pid ${pids[i]}) ignored SIGTERM for 15 s; killing it"
      kill -KILL "${pids[i]}" 2>/dev/null || true
    fi
  done
  stopped=$((stopped + ${#pids[@]}))
}

stop() {
  stopped=0
  # Jobs first, so no slurmstepd outlives its slurmd; then the nodes, the
  # controller and munge: the reverse of start.
  if pidof_daemon slurmctld >/dev/null; then
    local jobs i
    jobs=$(SLURM_CONF=$conf squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ')
    if [ -n "${jobs// /}" ]; then
      say "cancelling jobs still queued or running: $jobs"
      # shellcheck disable=SC2086
      SLURM_CONF=$conf scancel $jobs 2>/dev/null || true
      for ((i = 0; i < 300; i++)); do
        [ -z "$(SLURM_CONF=$conf squeue -h -o %A 2>/dev/null)" ] && break
        sleep 0.1
      done
    fi
  fi
  stop_pids "${nodes[@]/#/slurmd-}"
  stop_pids slurmctld
  stop_pids munged
  say "stopped $stopped daemon(s)"
}

cmd=${1:-}
case "$cmd" in
  start)
    install
    if healthy; then
      say "already running (SLURM_CONF=$conf)"
      exports
      exit 0
    fi
    # Whatever a previous start left half-running is stopped first.
    stop
    write_config
    if ! start_munge; then
      say "munged did not start"
      logs
      stop
      exit 3
    fi
    if ! start_slurm; then
      logs
      stop
      exit 3
    fi
    say "up: slurmctld on 127.0.0.1:$port, nodes ${nodes[*]} with $gpus fake GPU(s) and $cpus CPU(s) each, state in $dir"
    exports
    ;;
  stop)
    stop
    ;;
  status)
    if healthy; then
      SLURM_CONF=$conf sinfo -N -o '%N %T %G %f' >&2
      say "running (SLURM_CONF=$conf)"
      exit 0
    fi
    for d in $(daemons); do
      if pid=$(pidof_daemon "$d"); then say "$d: running (pid $pid)"; else say "$d: not running"; fi
    done
    exit 1
    ;;
  env)
    exports
    ;;
  *)
    echo "usage: $0 start|stop|status|env" >&2
    exit 2
    ;;
esac
