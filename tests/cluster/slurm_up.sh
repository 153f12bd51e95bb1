#!/usr/bin/env bash
# Start a throwaway single-node SLURM cluster on localhost (munge, MariaDB,
# slurmdbd, slurmctld, slurmd) with one fake GPU and more CPU slots than cores, for the cluster tests.
#
# All state lives in one directory, written fresh on every run:
#   ${BEHIND_ROPE_SLURM_DIR:-/tmp/behind-rope-slurm}
# Clients find the cluster via SLURM_CONF; /etc/slurm/{slurm,gres}.conf are links to
# the state dir's files, for the srun calls inside jobs (see below), and nothing else under /etc is written:
#   source "${BEHIND_ROPE_SLURM_DIR:-/tmp/behind-rope-slurm}/env.sh"
# Stop it with slurm_down.sh (next to this script).
#
# Debian 12 without systemd: every daemon is started by hand, in order, and
# each one is waited for with a bounded wait.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STATE=${BEHIND_ROPE_SLURM_DIR:-/tmp/behind-rope-slurm}
MARKER=.behind-rope-slurm   # proves a directory is ours before we wipe it

CLUSTER=behindrope
PARTITION=debug
ACCOUNT=root
GPU_TYPE=tiny
DB_PORT=3307                # non-standard, so a system MariaDB is not touched
CTLD_PORT=6817
SLURMD_PORT=6818
DBD_PORT=6819
DB_NAME=slurm_acct_db
DB_USER=slurm
DB_PASS=behind-rope-slurm

die() { echo "slurm_up: ERROR: $*" >&2; exit 1; }
log() { echo "slurm_up: $*" >&2; }

show_log() {  # show_log FILE: the last lines of a daemon log, for errors
    if [[ -f $1 ]]; then
        echo "---- last lines of $1 ----" >&2
        tail -n 30 "$1" >&2 || true
        echo "----" >&2
    fi
}

# wait_for DESCRIPTION SECONDS LOGFILE CMD...: poll CMD until it succeeds;
# on timeout, fail with the log tail.
wait_for() {
    local what=$1 secs=$2 logfile=$3
    shift 3
    local deadline=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then
            show_log "$logfile"
            die "timed out after ${secs}s waiting for $what"
        fi
        sleep 0.2
    done
}

[[ $(id -u) -eq 0 ]] || die "must run as root (daemons switch to the slurm/munge/mysql users)"
[[ $STATE == /?* && $STATE != *..* ]] || die "BEHIND_ROPE_SLURM_DIR must be an absolute path, not '$STATE'"

# ---- packages ---------------------------------------------------------------
if ! command -v slurmctld >/dev/null || ! command -v slurmdbd >/dev/null ||
    ! command -v munged >/dev/null || ! command -v mariadbd >/dev/null; then
    log "installing Debian packages (slurm-wlm slurmdbd munge mariadb-server)"
    pkgs=(slurm-wlm slurmdbd munge mariadb-server)
    export DEBIAN_FRONTEND=noninteractive
    # Try without 'apt-get update' first: it is slow and often not needed.
    if ! timeout 600 apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >"/tmp/behind-rope-apt.log" 2>&1; then
        timeout 300 apt-get update -qq >>"/tmp/behind-rope-apt.log" 2>&1 || true
        timeout 600 apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >>"/tmp/behind-rope-apt.log" 2>&1 ||
            { show_log /tmp/behind-rope-apt.log; die "apt-get install failed"; }
    fi
fi

# ---- stop a previous cluster and start from an empty state dir --------------
if compgen -G "$STATE/run/*.pid" >/dev/null; then
    log "a previous cluster in $STATE seems to be up; stopping it"
    "$HERE/slurm_down.sh"
fi
if [[ -e $STATE ]]; then
    # Refuse to wipe a directory that we did not create.
    [[ -f $STATE/$MARKER || -z $(ls -A "$STATE") ]] ||
        die "$STATE exists and is not a behind-rope SLURM state dir; refusing to delete it"
    rm -rf "$STATE"
fi

# Daemons from elsewhere holding our ports would make the waits below lie.
port_busy() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
for port in "$DB_PORT" "$CTLD_PORT" "$SLURMD_PORT" "$DBD_PORT"; do
    if port_busy "$port"; then
        die "port $port on 127.0.0.1 is already in use (another SLURM/MariaDB?); stop it first"
    fi
done

ETC=$STATE/etc RUN=$STATE/run LOGS=$STATE/log MUNGE=$STATE/munge DB=$STATE/mysql SPOOL=$STATE/spool
mkdir -p "$STATE"
chmod 755 "$STATE"
touch "$STATE/$MARKER"
mkdir -p "$ETC" "$RUN" "$LOGS" "$MUNGE" "$DB" "$SPOOL/slurmctld" "$SPOOL/slurmd"
# munged refuses directories writable by others; its files belong to munge.
chown munge:munge "$MUNGE"
chmod 755 "$MUNGE"
chown mysql:mysql "$DB"
chown slurm:slurm "$RUN" "$LOGS" "$SPOOL/slurmctld"
chmod 755 "$RUN" "$LOGS"

# If anything below fails, stop what was started (the logs stay in $STATE).
started_ok=0
cleanup_on_failure() {
    if ((started_ok == 0)); then
        log "start failed; stopping what was started (logs are in $LOGS, $DB, $MUNGE)"
        "$HERE/slurm_down.sh" >&2 || true
    fi
}
trap cleanup_on_failure EXIT

HOST=$(hostname -s)
export SLURM_CONF=$ETC/slurm.conf
MUNGE_SOCK=$MUNGE/munged.sock

# ---- 1. munged (own key and socket, so a system munge is not needed) -------
log "starting munged"
head -c 1024 /dev/urandom >"$MUNGE/munge.key"
chown munge:munge "$MUNGE/munge.key"
chmod 400 "$MUNGE/munge.key"
# munged insists on owning its log file; early errors go to the same file.
install -o munge -g munge -m 640 /dev/null "$MUNGE/munged.log"
# munged forks into the background itself and writes its pidfile.
timeout 30 runuser -u munge -- munged \
    --socket="$MUNGE_SOCK" --key-file="$MUNGE/munge.key" \
    --pid-file="$MUNGE/munged.pid" --log-file="$MUNGE/munged.log" \
    --seed-file="$MUNGE/munged.seed" </dev/null >>"$MUNGE/munged.log" 2>&1 ||
    { show_log "$MUNGE/munged.log"; die "munged failed to start"; }
ln -s "$MUNGE/munged.pid" "$RUN/munged.pid"
munge_ok() { timeout 5 munge -n -S "$MUNGE_SOCK" | timeout 5 unmunge -S "$MUNGE_SOCK"; }
wait_for "munged to answer on $MUNGE_SOCK" 20 "$MUNGE/munged.log" munge_ok

# ---- 2. MariaDB on its own datadir, socket and TCP port --------------------
log "initialising MariaDB in $DB/data"
# Options shared by install and server; no defaults file, so /etc/mysql is ignored.
# Durability is traded for speed: this database is thrown away. (slurmdbd
# logs "Database settings not recommended" for the small InnoDB sizes; harmless.)
DB_OPTS=(--no-defaults --user=mysql --datadir="$DB/data"
    --innodb-buffer-pool-size=64M --innodb-log-file-size=16M
    --innodb-lock-wait-timeout=900
    --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0)
# Create the slurmdbd database and user during the install (saves a round trip);
# FLUSH PRIVILEGES loads the grant tables, which bootstrap mode skips.
cat >"$DB/init.sql" <<EOF
FLUSH PRIVILEGES;
CREATE DATABASE $DB_NAME;
CREATE USER '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'127.0.0.1';
EOF
chmod 644 "$DB/init.sql"
timeout 120 mariadb-install-db "${DB_OPTS[@]}" --skip-test-db --skip-name-resolve \
    --auth-root-authentication-method=socket --extra-file="$DB/init.sql" \
    >"$DB/install.log" 2>&1 ||
    { show_log "$DB/install.log"; die "mariadb-install-db failed"; }

log "starting mariadbd on 127.0.0.1:$DB_PORT"
# mariadbd does not daemonize: setsid detaches it from this script's session.
setsid mariadbd "${DB_OPTS[@]}" --bind-address=127.0.0.1 --port="$DB_PORT" \
    --socket="$DB/mysqld.sock" --pid-file="$DB/mariadbd.pid" \
    --log-error="$DB/mariadbd.log" --skip-name-resolve --skip-log-bin \
    </dev/null >>"$DB/mariadbd.log" 2>&1 &
# setsid execs without forking here (a background job is no group leader), so
# $! is mariadbd itself; recording it now lets slurm_down.sh stop a mariadbd
# that never got as far as writing its own pidfile.
echo "$!" >"$RUN/mariadbd.pid"
wait_for "MariaDB to answer on $DB/mysqld.sock" 60 "$DB/mariadbd.log" \
    timeout 5 mariadb-admin --no-defaults --socket="$DB/mysqld.sock" -u root ping

# ---- 3. slurm.conf, gres.conf, slurmdbd.conf --------------------------------
# Memory as slurmd sees it; CPUs as many as SLOTS (config_overrides keeps the node from being drained
# for having fewer).  A test job spends most of its time starting (the job, srun, Snakemake) and being
# polled, not computing: on the real core count the smoke DAG took about 13 minutes, most jobs queued.
SLOTS=${BEHIND_ROPE_SLURM_CPUS:-8}
memory=$(timeout 30 slurmd -C | head -n 1 | grep -o 'RealMemory=[0-9]*') ||
    die "could not read the node's memory from 'slurmd -C'"
node_hw="CPUs=$SLOTS Boards=1 SocketsPerBoard=1 CoresPerSocket=$SLOTS ThreadsPerCore=1 $memory"

cat >"$ETC/slurm.conf" <<EOF
# Generated by tests/cluster/slurm_up.sh; rewritten on every start.
ClusterName=$CLUSTER
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=slurm
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
# Our own munged, not /run/munge. AuthInfo covers slurmctld/slurmd/clients;
# the link to slurmdbd (slurmctld, sacct, sacctmgr) takes its munge socket
# from AccountingStoragePass, and without it tries /run/munge and hangs.
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
AccountingStoragePass=socket=$MUNGE_SOCK
CryptoType=crypto/munge

StateSaveLocation=$SPOOL/slurmctld
SlurmdSpoolDir=$SPOOL/slurmd
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info

# No cgroups in this sandbox.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmdParameters=config_overrides
# Backfill every second, not every 30: a pending GPU job holds the node for itself, and only backfill starts
# the CPU jobs beside it.
SchedulerParameters=bf_interval=1
# Jobs that do not ask for memory must not take the whole node.
DefMemPerCPU=1000
ReturnToService=2
# Keep finished jobs visible to squeue/scontrol for status polling.
MinJobAge=300
# Quick teardown of cancelled jobs.
KillWait=5

# Accounting, so that sacct works (the Snakemake plugin polls it).
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStorageTRES=gres/gpu,gres/gpu:$GPU_TYPE
# Store --comment (the plugin puts the rule name there).
AccountingStoreFlags=job_comment
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
JobCompType=jobcomp/none

# One fake GPU (see gres.conf): proves GPU routing, nothing more.
GresTypes=gpu

NodeName=$HOST NodeAddr=127.0.0.1 $node_hw Gres=gpu:$GPU_TYPE:1 State=UNKNOWN
PartitionName=$PARTITION Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
# The partitions that tests/cluster/partitions.yaml routes to, on the same node.
PartitionName=cpu Nodes=$HOST MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$HOST MaxTime=INFINITE State=UP
EOF

# The fake GPU. SLURM 22.05 drops a GPU without File= ("Removing file-less
# GPU"), and wants File= to be a character device: a symlink to /dev/null
# named ...0 gives device index 0. Nothing opens it (task/none, no cgroups).
mkdir -p "$STATE/dev"
ln -s /dev/null "$STATE/dev/${GPU_TYPE}gpu0"
cat >"$ETC/gres.conf" <<EOF
NodeName=$HOST Name=gpu Type=$GPU_TYPE File=$STATE/dev/${GPU_TYPE}gpu0
EOF

# slurmdbd refuses a config readable by others (it holds the DB password).
cat >"$ETC/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
DbdHost=$HOST
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=slurm
PidFile=$RUN/slurmdbd.pid
LogFile=$LOGS/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=$DB_USER
StoragePass=$DB_PASS
StorageLoc=$DB_NAME
EOF
chown slurm:slurm "$ETC/slurmdbd.conf"
chmod 600 "$ETC/slurmdbd.conf"
chmod 644 "$ETC/slurm.conf" "$ETC/gres.conf"

# Inside a job, Snakemake's SLURM jobstep plugin drops every SLURM_* variable (SLURM_CONF too)
# before it calls srun, which then looks for the default /etc/slurm/slurm.conf, as on a real
# cluster.  Link ours there, unless the machine has a configuration of its own.
for conf in slurm.conf gres.conf; do
    target=/etc/slurm/$conf
    if [[ -e $target && ! -L $target ]] || { [[ -L $target ]] && [[ $(readlink "$target") != "$STATE"/* ]]; }; then
        die "$target exists and is not ours; this test cluster will not replace a real SLURM configuration"
    fi
    mkdir -p /etc/slurm
    ln -sfn "$ETC/$conf" "$target"
done

# ---- 4. slurmdbd --------------------------------------------------------------
log "starting slurmdbd"
# slurmdbd reads slurmdbd.conf from the directory of SLURM_CONF.
timeout 60 slurmdbd </dev/null >>"$LOGS/slurmdbd.log" 2>&1 ||
    { show_log "$LOGS/slurmdbd.log"; die "slurmdbd failed to start"; }
wait_for "slurmdbd to answer (sacctmgr list cluster)" 60 "$LOGS/slurmdbd.log" \
    timeout 10 sacctmgr -n list cluster

# ---- 5. slurmctld, then slurmd ---------------------------------------------
log "starting slurmctld"
timeout 60 slurmctld -f "$SLURM_CONF" </dev/null >>"$LOGS/slurmctld.log" 2>&1 ||
    { show_log "$LOGS/slurmctld.log"; die "slurmctld failed to start"; }
wait_for "slurmctld to answer (scontrol ping)" 60 "$LOGS/slurmctld.log" \
    bash -c 'timeout 10 scontrol ping | grep -q UP'

log "starting slurmd"
timeout 60 slurmd -f "$SLURM_CONF" </dev/null >>"$LOGS/slurmd.log" 2>&1 ||
    { show_log "$LOGS/slurmd.log"; die "slurmd failed to start"; }

node_state() { timeout 10 sinfo -h -o %T -n "$HOST" 2>/dev/null | head -n 1; }
deadline=$((SECONDS + 60))
until [[ $(node_state) == idle ]]; do
    state=$(node_state || true)
    # A drained/invalid node will not come back by itself: fail now.
    if [[ $state == *drain* || $state == inval* ]] || ((SECONDS >= deadline)); then
        show_log "$LOGS/slurmd.log"
        show_log "$LOGS/slurmctld.log"
        timeout 10 sinfo -N -o '%N %T %E' >&2 || true
        die "node $HOST is '${state:-unknown}', not idle"
    fi
    sleep 0.2
done

# ---- 6. the account jobs use -------------------------------------------------
# slurmctld registers the cluster in slurmdbd, which creates account root
# with user root in it; wait for that rather than assume it.
has_account() {
    timeout 10 sacctmgr -n -P list assoc cluster="$CLUSTER" account="$ACCOUNT" user=root format=account |
        grep -qx "$ACCOUNT"
}
wait_for "account $ACCOUNT with user root in cluster $CLUSTER" 30 "$LOGS/slurmdbd.log" has_account

cat >"$STATE/env.sh" <<EOF
# Source this to use the test cluster started by tests/cluster/slurm_up.sh.
export SLURM_CONF='$SLURM_CONF'
export BEHIND_ROPE_SLURM_DIR='$STATE'
export BEHIND_ROPE_SLURM_ACCOUNT='$ACCOUNT'
export BEHIND_ROPE_SLURM_PARTITION='$PARTITION'
export BEHIND_ROPE_SLURM_GPU_TYPE='$GPU_TYPE'
EOF

started_ok=1
log "cluster $CLUSTER is up (node $HOST idle, partition $PARTITION, account $ACCOUNT, gpu type $GPU_TYPE); logs in $LOGS"
cat "$STATE/env.sh"
