#!/usr/bin/env bash
# A private, single-host Slurm cluster for asad's tests and for trying asad on a laptop.
#
#   local-cluster.sh up     [--nodes N] [--cpus C] [--mem MB] [--gpus G] [--accounting] [--priority basic|multifactor]
#                           [--max-age D]          (PriorityMaxAge with multifactor; default 1-0)
#                           [--priority-calc-period M] (PriorityCalcPeriod in minutes with multifactor; default: Slurm's 5)
#                           [--age-weight W]       (PriorityWeightAge with multifactor; default 1000)
#                           [--enforce E]          (AccountingStorageEnforce with --accounting, e.g. limits;
#                                                   default: none. Accounts asad and bg exist for root.)
#                           [--max-array-size N]   (Slurm's MaxArraySize; default 1001, Slurm's own)
#                           [--sched-params S]     (SchedulerParameters; default: passes every few seconds)
#   local-cluster.sh down   [--purge]
#   local-cluster.sh status
#   local-cluster.sh env             # prints: export SLURM_CONF=...
#   local-cluster.sh stop-controller # stops slurmctld only (tests: "Slurm went away"); `up` brings it back
#
# Everything lives in $ASAD_CLUSTER_DIR (default /tmp/asad-cluster): slurm.conf, state, spool, logs,
# pid files, its own munged (own key and socket) and, with --accounting, its own MariaDB (own datadir,
# socket and port) and slurmdbd. Nothing under /etc is read or written. Ports start at
# $ASAD_CLUSTER_PORT_BASE (default 16810): +0 slurmctld, +1 slurmdbd, +2 MariaDB, +10.. one per slurmd.
# $ASAD_SLURMD_DEBUG (default info): SlurmdDebug, e.g. debug4 (slurmd then logs how each job end was answered).
# $ASAD_SLURMCTLD_DEBUG (default info): SlurmctldDebug, e.g. debug (backfill logs "beginning" at every pass).
#
# Idempotent: `up` starts only the daemons that are not running; `down` stops only the daemons whose
# pid files `up` wrote. Needs root (slurmd launches jobs; CI runs as root).
set -euo pipefail

DIR="${ASAD_CLUSTER_DIR:-/tmp/asad-cluster}"
PORT_BASE="${ASAD_CLUSTER_PORT_BASE:-16810}"
CLUSTER_NAME="asad"
DB_NAME="slurm_acct_db"
DB_USER="slurm"
DB_PASS="asad-local"

die() { echo "local-cluster: error: $*" >&2; exit 1; }
say() { echo "local-cluster: $*" >&2; }

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }

# ---------------------------------------------------------------- settings ---------------------
NODES=4; CPUS=28; MEM_MB=32000; ACCOUNTING=0; PRIORITY=basic; GPUS=0; MAX_AGE=1-0; MAX_ARRAY_SIZE=1001
AGE_WEIGHT=1000; ENFORCE=
# Empty: no PriorityCalcPeriod line, so Slurm's default (5 minutes) applies.
PRIORITY_CALC_PERIOD=
# Tests want starts within seconds: backfill every 2 s at 1-s resolution (Slurm's defaults: 30 s, 60 s).
DEFAULT_SCHED_PARAMS=bf_interval=2,bf_resolution=1,bf_continue,sched_interval=5,sched_min_interval=100000
SCHED_PARAMS=$DEFAULT_SCHED_PARAMS
load_saved_settings() {
    # A later `up` without flags (e.g. after stop-controller) keeps the cluster it started.
    if [[ -f "$DIR/settings" ]]; then
        # shellcheck disable=SC1091
        source "$DIR/settings"
    fi
}
save_settings() {
    cat >"$DIR/settings" <<EOF
NODES=$NODES
CPUS=$CPUS
MEM_MB=$MEM_MB
ACCOUNTING=$ACCOUNTING
PRIORITY=$PRIORITY
GPUS=$GPUS
MAX_AGE=$MAX_AGE
PRIORITY_CALC_PERIOD=$PRIORITY_CALC_PERIOD
MAX_ARRAY_SIZE=$MAX_ARRAY_SIZE
SCHED_PARAMS=$SCHED_PARAMS
AGE_WEIGHT=$AGE_WEIGHT
ENFORCE=$ENFORCE
PORT_BASE=$PORT_BASE
EOF
}

CTLD_PORT() { echo $((PORT_BASE)); }
DBD_PORT() { echo $((PORT_BASE + 1)); }
DB_PORT() { echo $((PORT_BASE + 2)); }
NODE_PORT() { echo $((PORT_BASE + 10 + $1 - 1)); }

# ---------------------------------------------------------------- helpers ----------------------
pid_alive() {  # pid_alive FILE: the pid in FILE is a live process
    [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null
}
port_busy() {  # something listens on 127.0.0.1:PORT
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local limit=$1 what=$2; shift 2
    local deadline=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then
            return 1
        fi
        sleep 0.2
    done
}
require_port_free() {  # require_port_free PORT WHAT
    if port_busy "$1"; then
        die "port $1 (for $2) is already in use by another program; set ASAD_CLUSTER_PORT_BASE to another base (now $PORT_BASE)"
    fi
}

need_packages() {
    local missing=() pkgs=(slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge)
    if ((ACCOUNTING)); then pkgs+=(slurmdbd:slurmdbd mariadbd:mariadb-server); fi
    local entry
    for entry in "${pkgs[@]}"; do
        command -v "${entry%%:*}" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v "${entry%%:*}" >/dev/null 2>&1 \
            || missing+=("${entry#*:}")
    done
    ((${#missing[@]} == 0)) && return 0
    if [[ $EUID -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
        say "installing missing packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q "${missing[@]}" >"$DIR/log/apt.log" 2>&1 \
            || { apt-get update -q >>"$DIR/log/apt.log" 2>&1 && apt-get install -y -q "${missing[@]}" >>"$DIR/log/apt.log" 2>&1; } \
            || die "apt-get install ${missing[*]} failed; see $DIR/log/apt.log"
    else
        die "missing packages: ${missing[*]} (install them as root: apt-get install ${missing[*]})"
    fi
}

# ---------------------------------------------------------------- config files ------------------
write_slurm_conf() {
    local acct_lines sched_lines last=$NODES gres_lines="" node_gres=""
    if ((GPUS > 0)); then
        # Dummy GPUs: character devices with /dev/null's numbers, so Slurm can stat them and sets
        # CUDA_VISIBLE_DEVICES for the jobs that ask for them; nothing real is behind them.
        mkdir -p "$DIR/gpu"
        local g
        for ((g = 0; g < GPUS; g++)); do
            [[ -c $DIR/gpu/nvidia$g ]] || mknod "$DIR/gpu/nvidia$g" c 1 3
        done
        printf 'NodeName=n[1-%s] Name=gpu File=%s/gpu/nvidia[0-%s]\n' "$last" "$DIR" "$((GPUS - 1))" >"$DIR/gres.conf"
        chmod 0644 "$DIR/gres.conf"
        gres_lines="GresTypes=gpu"
        node_gres=" Gres=gpu:$GPUS"
    else
        rm -f "$DIR/gres.conf"
    fi
    if ((ACCOUNTING)); then
        acct_lines="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$(DBD_PORT)
# Connections to slurmdbd authenticate with the "global" munge socket, which is AccountingStoragePass.
AccountingStoragePass=socket=$DIR/munge/munge.socket
JobCompType=jobcomp/none
# asad's tags travel in --comment; store it so sacct can find a workflow's jobs after a crash.
AccountingStoreFlags=job_comment"
        if [[ -n ${ENFORCE:-} ]]; then
            acct_lines+="
AccountingStorageEnforce=$ENFORCE"
        fi
    else
        acct_lines="AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none"
    fi
    if [[ $PRIORITY == multifactor ]]; then
        sched_lines="PriorityType=priority/multifactor
PriorityWeightAge=${AGE_WEIGHT:-1000}
PriorityWeightFairshare=1000
PriorityWeightJobSize=100
PriorityMaxAge=${MAX_AGE:-1-0}"
        if [[ -n ${PRIORITY_CALC_PERIOD:-} ]]; then
            sched_lines+="
PriorityCalcPeriod=$PRIORITY_CALC_PERIOD"
        fi
    else
        sched_lines="PriorityType=priority/basic"
    fi
    cat >"$DIR/slurm.conf" <<EOF
# Written by asad's slurm-scripts/local-cluster.sh; regenerated on every \`up\`.
ClusterName=$CLUSTER_NAME
SlurmctldHost=localhost
SlurmctldPort=$(CTLD_PORT)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=${ASAD_SLURMCTLD_DEBUG:-info}
SlurmdDebug=${ASAD_SLURMD_DEBUG:-info}
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=60
MessageTimeout=10
# Finished jobs stay visible in squeue/scontrol for 30 minutes (the backend's fallback without sacct).
MinJobAge=1800
# Array indices must stay below this (asad splits larger arrays into several array jobs).
MaxArraySize=$MAX_ARRAY_SIZE
KillWait=5
# Scheduling: FIFO priority with backfill (--sched-params; the default re-runs often so tests see starts within seconds).
SchedulerType=sched/backfill
SchedulerParameters=$SCHED_PARAMS
$sched_lines
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Without this a job that gives no --mem gets the whole node's memory and blocks it.
DefMemPerCPU=500
# Memory is sampled every second and a job above its --mem is killed (state FAILED/OUT_OF_MEMORY).
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherParams=OverMemoryKill
JobAcctGatherFrequency=task=1
$acct_lines
$gres_lines
NodeName=n[1-$last] NodeHostname=localhost Port=$(NODE_PORT 1)-$(NODE_PORT "$last") CPUs=$CPUS RealMemory=$MEM_MB${node_gres} State=UNKNOWN
PartitionName=main Nodes=n[1-$last] Default=YES MaxTime=INFINITE State=UP
PartitionName=short Nodes=n[1-$last] MaxTime=02:00:00 State=UP
EOF
    chmod 0644 "$DIR/slurm.conf"
}

write_slurmdbd_conf() {
    cat >"$DIR/slurmdbd.conf" <<EOF
# Written by asad's slurm-scripts/local-cluster.sh
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
DbdHost=localhost
DbdPort=$(DBD_PORT)
SlurmUser=root
PidFile=$DIR/run/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$(DB_PORT)
StorageUser=$DB_USER
StoragePass=$DB_PASS
StorageLoc=$DB_NAME
EOF
    chmod 0600 "$DIR/slurmdbd.conf"
}

# ---------------------------------------------------------------- daemons ----------------------
start_munge() {
    if pid_alive "$DIR/run/munged.pid"; then return 0; fi
    mkdir -p "$DIR/munge"
    chmod 0700 "$DIR/munge"
    if [[ ! -s "$DIR/munge/munge.key" ]]; then
        dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
        chmod 0400 "$DIR/munge/munge.key"
    fi
    # --force: munged refuses keys/sockets under a world-writable /tmp without it, although our own
    # folder is 0700.
    munged --force --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge/munge.key" \
        --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" \
        --seed-file="$DIR/munge/munged.seed" >>"$DIR/log/munged.out" 2>&1 \
        || die "munged failed to start; see $DIR/log/munged.log"
    wait_for 10 munged test -S "$DIR/munge/munge.socket" || die "munged did not create its socket; see $DIR/log/munged.log"
}

start_mariadb() {
    local data="$DIR/mysql/data" sock="$DIR/mysql/mysqld.sock"
    if pid_alive "$DIR/run/mariadbd.pid"; then return 0; fi
    require_port_free "$(DB_PORT)" MariaDB
    mkdir -p "$DIR/mysql"
    local fresh=0
    if [[ ! -d "$data/mysql" ]]; then
        fresh=1
        mariadb-install-db --no-defaults --datadir="$data" --user=root --auth-root-authentication-method=socket \
            --skip-test-db >"$DIR/log/mariadb-install.log" 2>&1 \
            || die "mariadb-install-db failed; see $DIR/log/mariadb-install.log"
    fi
    # Small buffers: the whole accounting database of a test run is a few MB.
    mariadbd --no-defaults --user=root --datadir="$data" --socket="$sock" --port="$(DB_PORT)" \
        --bind-address=127.0.0.1 --pid-file="$DIR/run/mariadbd.pid" --log-error="$DIR/log/mariadb.log" \
        --innodb-buffer-pool-size=64M --innodb-log-file-size=16M --innodb-lock-wait-timeout=900 \
        --skip-name-resolve --max-connections=50 >>"$DIR/log/mariadb.out" 2>&1 &
    disown
    wait_for 60 MariaDB mariadb-admin --no-defaults --socket="$sock" ping \
        || die "MariaDB did not come up within 60 s; see $DIR/log/mariadb.log"
    if ((fresh)); then
        mariadb --no-defaults --socket="$sock" -u root <<EOF || die "could not create the accounting database"
CREATE DATABASE IF NOT EXISTS $DB_NAME;
CREATE USER IF NOT EXISTS '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'127.0.0.1';
GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'localhost';
FLUSH PRIVILEGES;
EOF
    fi
}

start_slurmdbd() {
    if pid_alive "$DIR/run/slurmdbd.pid"; then return 0; fi
    require_port_free "$(DBD_PORT)" slurmdbd
    SLURM_CONF="$DIR/slurm.conf" slurmdbd >>"$DIR/log/slurmdbd.out" 2>&1 \
        || die "slurmdbd failed to start; see $DIR/log/slurmdbd.log"
    # slurmdbd creates its tables on first start; the port opens once that is done.
    wait_for 90 slurmdbd port_busy "$(DBD_PORT)" || die "slurmdbd did not listen on port $(DBD_PORT) within 90 s; see $DIR/log/slurmdbd.log"
    local out
    # The cluster must exist in the database before slurmctld registers with slurmdbd.
    if ! SLURM_CONF="$DIR/slurm.conf" sacctmgr -n -P list cluster format=cluster 2>/dev/null | grep -qx "$CLUSTER_NAME"; then
        out=$(SLURM_CONF="$DIR/slurm.conf" sacctmgr -i add cluster "$CLUSTER_NAME" 2>&1) || die "sacctmgr add cluster failed: $out"
        out=$(SLURM_CONF="$DIR/slurm.conf" sacctmgr -i add account asad Cluster="$CLUSTER_NAME" Description=asad Organization=asad 2>&1) \
            || die "sacctmgr add account failed: $out"
        out=$(SLURM_CONF="$DIR/slurm.conf" sacctmgr -i add user root Account=asad Cluster="$CLUSTER_NAME" 2>&1) \
            || die "sacctmgr add user failed: $out"
    fi
    # A second account for background load (bench real-strategies: "another account's jobs"); with
    # --enforce its jobs need an association of their own.
    if ! SLURM_CONF="$DIR/slurm.conf" sacctmgr -n -P list account format=account 2>/dev/null | grep -qx bg; then
        out=$(SLURM_CONF="$DIR/slurm.conf" sacctmgr -i add account bg Cluster="$CLUSTER_NAME" Description=bg Organization=bg 2>&1) \
            || die "sacctmgr add account bg failed: $out"
        out=$(SLURM_CONF="$DIR/slurm.conf" sacctmgr -i add user root Account=bg Cluster="$CLUSTER_NAME" 2>&1) \
            || die "sacctmgr add user to bg failed: $out"
    fi
}

start_slurmctld() {
    if pid_alive "$DIR/run/slurmctld.pid"; then return 0; fi
    require_port_free "$(CTLD_PORT)" slurmctld
    slurmctld -f "$DIR/slurm.conf" >>"$DIR/log/slurmctld.out" 2>&1 || die "slurmctld failed to start; see $DIR/log/slurmctld.log"
    wait_for 30 slurmctld env SLURM_CONF="$DIR/slurm.conf" scontrol ping \
        || die "slurmctld does not answer scontrol ping after 30 s; see $DIR/log/slurmctld.log"
}

start_slurmd() {
    local i name
    for ((i = 1; i <= NODES; i++)); do
        name="n$i"
        if pid_alive "$DIR/run/slurmd-$name.pid"; then continue; fi
        require_port_free "$(NODE_PORT "$i")" "slurmd $name"
        mkdir -p "$DIR/spool/$name"
        slurmd -f "$DIR/slurm.conf" -N "$name" >>"$DIR/log/slurmd-$name.out" 2>&1 \
            || die "slurmd $name failed to start; see $DIR/log/slurmd-$name.log"
    done
    # Nodes register within a second or two; wait until none is down/unknown.
    local bad
    local deadline=$((SECONDS + 45))
    while :; do
        bad=$(SLURM_CONF="$DIR/slurm.conf" sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 !~ /^(idle|alloc|mix|comp)/' | sort -u)
        [[ -z "$bad" ]] && break
        if ((SECONDS >= deadline)); then
            die "nodes not ready after 45 s: $(echo "$bad" | tr '\n' ' '); see $DIR/log/slurmd-*.log"
        fi
        # A node left DOWN from an earlier run comes back with an explicit resume.
        if echo "$bad" | grep -q 'down'; then
            SLURM_CONF="$DIR/slurm.conf" scontrol update nodename="n[1-$NODES]" state=resume >/dev/null 2>&1 || true
        fi
        sleep 0.5
    done
}

stop_pidfile() {  # stop_pidfile FILE NAME: TERM, wait up to 20 s, then KILL
    local file=$1 name=$2 pid
    [[ -s "$file" ]] || return 0
    pid=$(cat "$file")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        local i
        for ((i = 0; i < 100; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        if kill -0 "$pid" 2>/dev/null; then
            say "$name (pid $pid) ignored SIGTERM; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
        say "stopped $name (pid $pid)"
    fi
    rm -f "$file"
}

preflight_ports() {  # fail before starting anything when a port a stopped daemon needs is taken
    if ((ACCOUNTING)); then
        pid_alive "$DIR/run/mariadbd.pid" || require_port_free "$(DB_PORT)" MariaDB
        pid_alive "$DIR/run/slurmdbd.pid" || require_port_free "$(DBD_PORT)" slurmdbd
    fi
    pid_alive "$DIR/run/slurmctld.pid" || require_port_free "$(CTLD_PORT)" slurmctld
    local i
    for ((i = 1; i <= NODES; i++)); do
        pid_alive "$DIR/run/slurmd-n$i.pid" || require_port_free "$(NODE_PORT "$i")" "slurmd n$i"
    done
}

# ---------------------------------------------------------------- commands ---------------------
cmd_up() {
    [[ $EUID -eq 0 ]] || die "must run as root (slurmd starts jobs and needs root): run $0 up ... as root"
    local was_running=0
    for f in "$DIR"/run/*.pid; do
        [[ -e $f ]] && pid_alive "$f" && was_running=1
    done
    local want_nodes=$NODES want_cpus=$CPUS want_mem=$MEM_MB want_acct=$ACCOUNTING want_prio=$PRIORITY want_gpus=$GPUS
    local want_mas=$MAX_ARRAY_SIZE want_sp=$SCHED_PARAMS want_age=$MAX_AGE want_pcp=$PRIORITY_CALC_PERIOD
    local want_aw=$AGE_WEIGHT want_enf=$ENFORCE
    if ((was_running)) && [[ -f "$DIR/settings" ]]; then
        load_saved_settings
        MAX_ARRAY_SIZE=${MAX_ARRAY_SIZE:-1001}
        SCHED_PARAMS=${SCHED_PARAMS:-$DEFAULT_SCHED_PARAMS}
        MAX_AGE=${MAX_AGE:-1-0}
        PRIORITY_CALC_PERIOD=${PRIORITY_CALC_PERIOD:-}
        if ((FLAGS_GIVEN)) && [[ "$want_nodes $want_cpus $want_mem $want_acct $want_prio $want_gpus $want_mas $want_sp $want_age x$want_pcp $want_aw x$want_enf" != "$NODES $CPUS $MEM_MB $ACCOUNTING $PRIORITY ${GPUS:-0} $MAX_ARRAY_SIZE $SCHED_PARAMS $MAX_AGE x$PRIORITY_CALC_PERIOD ${AGE_WEIGHT:-1000} x${ENFORCE:-}" ]]; then
            die "a cluster is already running in $DIR with different settings ($NODES nodes x $CPUS cpus x $MEM_MB MB, accounting=$ACCOUNTING, priority=$PRIORITY, max age=$MAX_AGE, priority calc period=${PRIORITY_CALC_PERIOD:-default}); run '$0 down' first"
        fi
    fi
    mkdir -p "$DIR"/{state,spool,log,run}
    chmod 0755 "$DIR"
    need_packages
    save_settings
    write_slurm_conf
    preflight_ports
    local t0=$SECONDS
    start_munge
    if ((ACCOUNTING)); then
        write_slurmdbd_conf
        start_mariadb
        start_slurmdbd
    fi
    start_slurmctld
    start_slurmd
    say "up in $((SECONDS - t0)) s: $NODES nodes x $CPUS cpus x $MEM_MB MB, partitions main (default) and short, accounting=$( ((ACCOUNTING)) && echo on || echo off), priority=$PRIORITY"
    # a cluster of its own folder or ports: the hint must name them, or it points at the default one
    local which=""
    [ -n "${ASAD_CLUSTER_DIR:-}" ] && which="ASAD_CLUSTER_DIR=$DIR "
    [ -n "${ASAD_CLUSTER_PORT_BASE:-}" ] && which="${which}ASAD_CLUSTER_PORT_BASE=$PORT_BASE "
    say "use it with: eval \"\$(${which}$0 env)\""
}

cmd_down() {
    local purge=0
    [[ ${1:-} == --purge ]] && purge=1
    if [[ -d "$DIR/run" ]]; then
        local f
        for f in "$DIR"/run/slurmd-*.pid; do
            [[ -e $f ]] && stop_pidfile "$f" "$(basename "$f" .pid)"
        done
        stop_pidfile "$DIR/run/slurmctld.pid" slurmctld
        stop_pidfile "$DIR/run/slurmdbd.pid" slurmdbd
        stop_pidfile "$DIR/run/mariadbd.pid" mariadbd
        stop_pidfile "$DIR/run/munged.pid" munged
    fi
    if ((purge)); then
        # Only a folder this script made (it holds our slurm.conf marker) is removed.
        if [[ -f "$DIR/slurm.conf" ]] && grep -q 'local-cluster.sh' "$DIR/slurm.conf"; then
            rm -rf "$DIR"
            say "removed $DIR"
        fi
    fi
}

cmd_stop_controller() {
    stop_pidfile "$DIR/run/slurmctld.pid" slurmctld
}

cmd_status() {
    if [[ ! -f "$DIR/slurm.conf" ]]; then
        echo "no cluster in $DIR (run: $0 up)"
        return 3
    fi
    load_saved_settings
    local f rc=0 name
    echo "cluster folder: $DIR ($NODES nodes x $CPUS cpus x $MEM_MB MB, accounting=$ACCOUNTING, priority=$PRIORITY)"
    local daemons=(munged slurmctld)
    ((ACCOUNTING)) && daemons=(munged mariadbd slurmdbd slurmctld)
    local i
    for ((i = 1; i <= NODES; i++)); do daemons+=("slurmd-n$i"); done
    for name in "${daemons[@]}"; do
        f="$DIR/run/$name.pid"
        if pid_alive "$f"; then
            printf '  %-12s running (pid %s)\n' "$name" "$(cat "$f")"
        else
            printf '  %-12s stopped\n' "$name"
            rc=1
        fi
    done
    if pid_alive "$DIR/run/slurmctld.pid"; then
        SLURM_CONF="$DIR/slurm.conf" sinfo 2>&1 | sed 's/^/  /' || true
    fi
    return $rc
}

cmd_env() {
    [[ -f "$DIR/slurm.conf" ]] || die "no cluster in $DIR (run: $0 up)"
    echo "export SLURM_CONF=$DIR/slurm.conf"
    echo "export ASAD_CLUSTER_DIR=$DIR"
}

main() {
    local cmd=${1:-}
    [[ -n $cmd ]] || { usage; exit 2; }
    shift
    FLAGS_GIVEN=0
    local down_args=()
    if [[ $cmd != down ]]; then load_saved_settings; fi
    while (($#)); do
        case $1 in
            --nodes) NODES=${2:?--nodes needs a number}; FLAGS_GIVEN=1; shift 2 ;;
            --cpus) CPUS=${2:?--cpus needs a number}; FLAGS_GIVEN=1; shift 2 ;;
            --mem) MEM_MB=${2:?--mem needs MB}; FLAGS_GIVEN=1; shift 2 ;;
            --gpus) GPUS=${2:?--gpus needs a number}; FLAGS_GIVEN=1; shift 2 ;;
            --max-array-size) MAX_ARRAY_SIZE=${2:?--max-array-size needs a number}; FLAGS_GIVEN=1; shift 2 ;;
            --accounting) ACCOUNTING=1; FLAGS_GIVEN=1; shift ;;
            --no-accounting) ACCOUNTING=0; FLAGS_GIVEN=1; shift ;;
            --priority) PRIORITY=${2:?--priority needs basic or multifactor}; FLAGS_GIVEN=1; shift 2 ;;
            --sched-params) SCHED_PARAMS=${2:?--sched-params needs a SchedulerParameters string}; FLAGS_GIVEN=1; shift 2 ;;
            --max-age) MAX_AGE=${2:?--max-age needs a Slurm duration, e.g. 10:00 or 1-0}; FLAGS_GIVEN=1; shift 2 ;;
            --priority-calc-period) PRIORITY_CALC_PERIOD=${2:?--priority-calc-period needs minutes, e.g. 1}; FLAGS_GIVEN=1; shift 2 ;;
            --age-weight) AGE_WEIGHT=${2:?--age-weight needs a number}; FLAGS_GIVEN=1; shift 2 ;;
            --enforce) ENFORCE=${2:?--enforce needs an AccountingStorageEnforce value, e.g. limits}; FLAGS_GIVEN=1; shift 2 ;;
            --purge) down_args+=(--purge); shift ;;
            -h | --help) usage; exit 0 ;;
            *) die "unknown option: $1 (see $0 --help)" ;;
        esac
    done
    [[ $NODES =~ ^[1-9][0-9]*$ ]] || die "--nodes must be a positive integer, got '$NODES'"
    [[ $CPUS =~ ^[1-9][0-9]*$ ]] || die "--cpus must be a positive integer, got '$CPUS'"
    [[ $MEM_MB =~ ^[1-9][0-9]*$ ]] || die "--mem must be a positive number of MB, got '$MEM_MB'"
    GPUS=${GPUS:-0}
    [[ $GPUS =~ ^[0-9]+$ ]] || die "--gpus must be a whole number, got '$GPUS'"
    MAX_ARRAY_SIZE=${MAX_ARRAY_SIZE:-1001}  # settings saved by an older script lack it
    SCHED_PARAMS=${SCHED_PARAMS:-$DEFAULT_SCHED_PARAMS}
    [[ $SCHED_PARAMS =~ ^[A-Za-z0-9_=,:.-]+$ ]] || die "--sched-params must be a SchedulerParameters list like bf_interval=30,bf_resolution=60, got '$SCHED_PARAMS'"
    MAX_AGE=${MAX_AGE:-1-0}
    PRIORITY_CALC_PERIOD=${PRIORITY_CALC_PERIOD:-}  # settings saved by an older script lack them
    [[ -z $PRIORITY_CALC_PERIOD || $PRIORITY_CALC_PERIOD =~ ^[1-9][0-9]*$ ]] \
        || die "--priority-calc-period must be a positive number of minutes, got '$PRIORITY_CALC_PERIOD'"
    AGE_WEIGHT=${AGE_WEIGHT:-1000}
    ENFORCE=${ENFORCE:-}
    [[ $AGE_WEIGHT =~ ^[0-9]+$ ]] || die "--age-weight must be a whole number, got '$AGE_WEIGHT'"
    [[ -z $ENFORCE || $ENFORCE =~ ^[a-z,]+$ ]] || die "--enforce must be an AccountingStorageEnforce list like limits or associations,limits,qos, got '$ENFORCE'"
    [[ -z $ENFORCE || $ACCOUNTING == 1 ]] || die "--enforce needs --accounting (Slurm enforces limits through slurmdbd)"
    [[ $MAX_ARRAY_SIZE =~ ^[1-9][0-9]*$ ]] || die "--max-array-size must be a positive integer, got '$MAX_ARRAY_SIZE'"
    [[ $PRIORITY == basic || $PRIORITY == multifactor ]] || die "--priority must be basic or multifactor"
    case $cmd in
        up) cmd_up ;;
        down) cmd_down "${down_args[@]}" ;;
        status) cmd_status ;;
        env) cmd_env ;;
        stop-controller) cmd_stop_controller ;;
        -h | --help | help) usage ;;
        *) die "unknown command: $cmd (up|down|status|env|stop-controller)" ;;
    esac
}

main "$@"
