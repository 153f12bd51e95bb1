#!/usr/bin/env bash
# Stop the test cluster started by slurm_up.sh: slurmd, slurmctld, slurmdbd,
# mariadbd, munged, in that order, each by the pid in its pidfile (never by
# process name, so nothing else on the machine is touched).
# Idempotent: exits 0 when nothing runs or the state dir is missing.
# The state dir (logs included) is left in place for inspection.
set -euo pipefail

STATE=${BEHIND_ROPE_SLURM_DIR:-/tmp/behind-rope-slurm}
RUN=$STATE/run

log() { echo "slurm_down: $*" >&2; }

[[ -d $STATE ]] || exit 0

# pid_alive PID NAME: PID runs and is really NAME (guards against a stale
# pidfile whose pid was reused by an unrelated process).
# A zombie (exited, not yet reaped by its parent) counts as gone.
pid_alive() {
    local comm stat
    comm=$(cat "/proc/$1/comm" 2>/dev/null) || return 1
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    [[ $comm == "$2" && ${stat##*) } != Z* ]]
}

# stop NAME: TERM, wait up to 8 s (they take < 1 s), then KILL (wait 2 s more).
stop() {
    local name=$1 pidfile=$RUN/$1.pid pid
    [[ -e $pidfile ]] || return 0
    pid=$(tr -dc '0-9' <"$pidfile" 2>/dev/null || true)
    if [[ -n $pid ]] && pid_alive "$pid" "$name"; then
        kill -TERM "$pid" 2>/dev/null || true
        local i
        for ((i = 0; i < 80; i++)); do
            pid_alive "$pid" "$name" || break
            sleep 0.1
        done
        if pid_alive "$pid" "$name"; then
            log "$name ($pid) ignored TERM; sending KILL"
            kill -KILL "$pid" 2>/dev/null || true
            for ((i = 0; i < 20; i++)); do
                pid_alive "$pid" "$name" || break
                sleep 0.1
            done
            pid_alive "$pid" "$name" && log "WARNING: $name ($pid) is still alive"
        fi
        stopped+=("$pid")
    fi
    # The pidfile may be a symlink to the daemon's own pidfile: remove both.
    rm -f "$(readlink -f "$pidfile")" "$pidfile"
}

# Cancel jobs first: slurmstepd and job processes outlive slurmd otherwise.
if [[ -e $RUN/slurmctld.pid && -f $STATE/etc/slurm.conf ]]; then
    export SLURM_CONF=$STATE/etc/slurm.conf
    job_ids=$(timeout 5 squeue -h -o %i 2>/dev/null || true)
    if [[ -n $job_ids ]]; then
        # shellcheck disable=SC2086  # one argument per job id
        timeout 5 scancel $job_ids >/dev/null 2>&1 || true
        for ((i = 0; i < 50; i++)); do
            [[ -z $(timeout 5 squeue -h -t running,completing -o %i 2>/dev/null) ]] && break
            sleep 0.2
        done
    fi
fi

stopped=()
for daemon in slurmd slurmctld slurmdbd mariadbd munged; do
    stop "$daemon"
done

# The links slurm_up.sh made in /etc/slurm, if they still point here.
for conf in slurm.conf gres.conf; do
    if [[ -L /etc/slurm/$conf && $(readlink "/etc/slurm/$conf") == "$STATE"/* ]]; then
        rm -f "/etc/slurm/$conf"
    fi
done

# Dead daemons are reparented to PID 1, which may reap them late; wait (briefly)
# so that 'ps' right after this script no longer lists them as <defunct>.
for ((i = 0; i < 50; i++)); do
    left=0
    for pid in "${stopped[@]}"; do
        [[ -e /proc/$pid ]] && left=1
    done
    ((left == 0)) && break
    sleep 0.1
done
exit 0
