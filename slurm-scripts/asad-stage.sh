#!/bin/bash
# asad's stage wrapper: what each stage's Slurm job runs.
#
# Reads (environment):
#   ASAD_RUN_DIR          the workflow's run folder (required; created if missing)
#   ASAD_STAGE            the stage's name (required; names the marker and log files)
#   ASAD_COMMAND          the stage's command line, or the path of a script (required)
#   ASAD_WAIT_FOR         space-separated names of stages whose end markers to wait for before
#                         running (naive mode: the job was submitted without a Slurm dependency)
#   ASAD_WAIT_TIMEOUT_S   give up waiting after this many seconds (default 0 = wait until the time
#                         limit; asad cancels the job when a predecessor fails without a marker)
#   ASAD_WAIT_POLL_S      seconds between looks at the markers (default 2)
#   ASAD_LOG              where the command's output goes (default $ASAD_RUN_DIR/$ASAD_STAGE.log;
#                         "-" = the job's own Slurm output file)
#   every other variable is passed to the command unchanged (the stage's `env`).
#
# Writes in $ASAD_RUN_DIR (each file replaced atomically; a new attempt removes its stage's old ones):
#   <stage>.alloc   "<epoch> <node> <job id>"  when the job started (the allocation exists; node as Slurm names it)
#   <stage>.start   "<epoch> <node> <job id>"  when the command started (after any wait)
#   <stage>.end     "<exit code> <epoch>"      when it ended; 
#   <stage>.log     the command's stdout and stderr; a new attempt first renames the last
#                   attempt's to <stage>.log.<its job id>
# Exit status: the command's. Without running it: 3 when a predecessor's end marker shows a
# failure (its .end then says "3 <epoch> predecessor <name> failed with <code>"), 4 on a wait
# timeout, 2 on a usage error. Under `srun` (big-job) only task 0 writes markers; all tasks run
# the command.
set -u

die_usage() { echo "asad-stage: $*" >&2; exit 2; }
[[ -n ${ASAD_RUN_DIR:-} ]] || die_usage "ASAD_RUN_DIR is not set"
[[ -n ${ASAD_STAGE:-} ]] || die_usage "ASAD_STAGE is not set"
[[ -n ${ASAD_COMMAND:-} ]] || die_usage "ASAD_COMMAND is not set"
[[ $ASAD_STAGE != */* ]] || die_usage "ASAD_STAGE must not contain '/': $ASAD_STAGE"

run_dir=$ASAD_RUN_DIR
stage=$ASAD_STAGE
job_id=${SLURM_JOB_ID:-none}
leader=1
[[ ${SLURM_PROCID:-0} == 0 ]] || leader=0

mkdir -p "$run_dir" || { echo "asad-stage: cannot create $run_dir" >&2; exit 2; }

marker() {  # marker NAME CONTENT: write atomically (readers never see half a file)
    ((leader)) || return 0
    local tmp="$run_dir/.$stage.$1.$$"
    printf '%s\n' "$2" >"$tmp" && mv -f "$tmp" "$run_dir/$stage.$1"
}
now() { date +%s; }

log=${ASAD_LOG:-$run_dir/$stage.log}
if ((leader)); then
    # A new attempt (a retry, a resume) keeps the last attempt's log as <log>.<its job id>: the
    # output of the run that failed is what the user reads next.
    old_job=
    [[ -r $run_dir/$stage.start ]] && read -r _ _ old_job _ <"$run_dir/$stage.start"
    if [[ $log != - && -s $log && -n $old_job && $old_job != "$job_id" ]]; then
        mv -f "$log" "$log.$old_job"
    fi
    rm -f "$run_dir/$stage.start" "$run_dir/$stage.end"
fi
marker alloc "$(now) ${SLURMD_NODENAME:-$(hostname)} $job_id"

# Naive mode: the allocation exists already; hold it until every predecessor has ended well.
poll_s=${ASAD_WAIT_POLL_S:-2}
timeout_s=${ASAD_WAIT_TIMEOUT_S:-0}
waited_from=$(now)
for pred in ${ASAD_WAIT_FOR:-}; do
    while [[ ! -s "$run_dir/$pred.end" ]]; do
        if ((timeout_s > 0 && $(now) - waited_from >= timeout_s)); then
            echo "asad-stage: $stage: no end marker of $pred after ${timeout_s}s; not running" >&2
            marker end "4 $(now) timeout waiting for $pred"
            exit 4
        fi
        sleep "$poll_s"
    done
    read -r pred_rc _ <"$run_dir/$pred.end"
    if [[ $pred_rc != 0 ]]; then
        echo "asad-stage: $stage: predecessor $pred failed with exit code $pred_rc; not running" >&2
        marker end "3 $(now) predecessor $pred failed with $pred_rc"
        exit 3
    fi
done

marker start "$(now) ${SLURMD_NODENAME:-$(hostname)} $job_id"

# A script path runs as a script; anything else is a command line. A script that is not executable
# runs with the interpreter its #! line names, else the one its suffix implies (bash for the rest):
# a user's 0644 train.py must not be read by bash.
interpreter_of() {
    local first=""
    IFS= read -r first <"$1" || true
    if [[ $first == '#!'* ]]; then
        read -r -a interp <<<"${first#\#!}"
        return
    fi
    case $1 in
        *.py) interp=(python3) ;;
        *.pl) interp=(perl) ;;
        *.R | *.r) interp=(Rscript) ;;
        *.zsh) interp=(zsh) ;;
        *.ksh) interp=(ksh) ;;
        *) interp=(bash) ;;
    esac
}
if [[ -f $ASAD_COMMAND && -x $ASAD_COMMAND ]]; then
    cmd=("$ASAD_COMMAND")
elif [[ -f $ASAD_COMMAND ]]; then
    interpreter_of "$ASAD_COMMAND"
    cmd=("${interp[@]}" "$ASAD_COMMAND")
else
    cmd=(bash -c "$ASAD_COMMAND")
fi

if [[ $log == - ]]; then
    "${cmd[@]}" &
else
    ((leader)) && : >"$log"
    "${cmd[@]}" >>"$log" 2>&1 &
fi
child=$!
# scancel sends SIGTERM to the batch script: pass it on, then record how the command ended.
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
wait "$child"
rc=$?
while kill -0 "$child" 2>/dev/null; do
    wait "$child"
    rc=$?
done
marker end "$rc $(now)"
exit "$rc"
