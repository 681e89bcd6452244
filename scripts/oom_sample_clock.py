"""On which clock an OOM kill falls in the recordings (issue 37, f37m), read from the slurmd.logs.

The recorded slurm.conf (slurm-scripts/local-cluster.sh) has ``JobAcctGatherType=jobacct_gather/linux``,
``JobAcctGatherParams=OverMemoryKill``, ``JobAcctGatherFrequency=task=1``, ``TaskPlugin=task/none``,
``ProctrackType=proctrack/linuxproc``: no cgroup, so the kill is slurmstepd's own over-memory check.
In Slurm 22.05.8 (tag slurm-22-05-8-1) the batch step's slurmstepd starts
``acct_gather_profile_startpoll()``; its ``_timer_thread`` (src/common/slurm_acct_gather_profile.c)
takes ``gettimeofday()`` once and then waits to ``abs.tv_sec += 1`` on that sub-second phase, each
wake signalling ``_watch_tasks`` (src/common/slurm_jobacct_gather.c) to poll the tasks' RSS from
/proc (``jag_common_poll_data``), which calls ``jobacct_gather_handle_mem_limit()``: above the
limit it logs "exceeded memory limit" and ``_acct_kill_step()`` asks slurmctld to SIGKILL the
step (REQUEST_CANCEL_JOB_STEP). So the samples are one second apart on the step's own phase (its
start on the node), not on whole wall-clock seconds, and the kill comes at the first sample after
the program's RSS passes ``--mem``.

Per OOM-killed job on its batch host (slurmd at debug or debug4 logs every sample:
"StepId=N.batch memory used:X limit:Y B"): slurmctld's allocation ("sched: Allocate" / backfill
"Started"), the step's first sample, the last sample under the limit, the kill sample, slurmctld's
"_job_complete", and the recorded ``oom_after_s``.

Usage: python scripts/oom_sample_clock.py [--rows]
"""

from __future__ import annotations

import argparse
import gzip
import re
import statistics
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import asad.bench.sim_vs_real as svr
from asad.bench.sim_vs_real import load_recordings, sim_settings
from asad.bench.sim_vs_real_logs import LOG_DIR, log_path
from asad.slurm.sim.job_end import oom_kill_at

_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\] (?:\[(\d+)\.batch\] )?(.*)$")
_SAMPLE = re.compile(r"memory used:(\d+) limit:(\d+) B")
_KILL = re.compile(r"exceeded memory limit")
_TASK = re.compile(r"^task 0 \(\d+\) started")
_LAUNCH = re.compile(r"^Launching batch job (\d+) ")
_CTLD_START = re.compile(r"(?:sched: Allocate JobId=|_start_job: Started JobId=)(\d+) ")
_CTLD_END = re.compile(r"_job_complete: JobId=(\d+) done")


def _stamp(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def step_events(path: Path, ids: set[str]) -> dict[str, dict]:
    """Per job id whose batch step ran on this node: its samples (instant, bytes), the first
    kill line, the task's start and slurmd's launch."""
    out: dict[str, dict] = {}
    with gzip.open(path, "rt", errors="replace") as fh:
        for line in fh:
            m = _LINE.match(line)
            if not m:
                continue
            t, job, text = _stamp(m.group(1)), m.group(2), m.group(3)
            if job is None:
                hit = _LAUNCH.search(text)
                if hit and hit.group(1) in ids:
                    out.setdefault(hit.group(1), {"samples": []})["launch"] = t
                continue
            if job not in ids:
                continue
            ev = out.setdefault(job, {"samples": []})
            s = _SAMPLE.search(text)
            if s:
                ev["samples"].append((t, int(s.group(1)), int(s.group(2))))
            elif _KILL.search(text):
                ev.setdefault("kill", t)
            elif _TASK.search(text):
                ev.setdefault("task", t)
    return {j: ev for j, ev in out.items() if "launch" in ev}


def ctld_events(rec: dict) -> tuple[dict[str, float], dict[str, float]]:
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    path = log_path(rec)
    if path is None:
        return starts, ends
    with gzip.open(path, "rt", errors="replace") as fh:
        for line in fh:
            m = _LINE.match(line)
            if not m:
                continue
            for pat, into in ((_CTLD_START, starts), (_CTLD_END, ends)):
                hit = pat.search(m.group(3))
                if hit:
                    into.setdefault(hit.group(1), _stamp(m.group(1)))
    return starts, ends


def kills(rec: dict) -> list[dict]:
    """One row per OOM-killed job of a recording with slurmd.logs."""
    ooms = {str(j["job_id"]): j for j in rec["jobs"]
            if j.get("oom_after_s") is not None and j.get("state") == "OUT_OF_MEMORY"}
    logs = sorted(LOG_DIR.glob(f"{rec['id']}.slurmd-n*.log.gz"))
    if not ooms or not logs:
        return []
    per_job: dict[str, dict] = {}
    for p in logs:
        for jid, ev in step_events(p, set(ooms)).items():
            if ev["samples"] or "kill" in ev:
                per_job[jid] = ev  # the batch host: the only node with the batch step's samples
    starts, ends = ctld_events(rec)
    rows = []
    for jid, job in ooms.items():
        ev = per_job.get(jid)
        if ev is None or "kill" not in ev or jid not in starts or jid not in ends:
            continue
        under = [t for t, used, limit in ev["samples"] if used <= limit and t < ev["kill"]]
        first = ev["samples"][0][0] if ev["samples"] else None
        alloc = starts[jid]
        # each model's end for this job, from slurmctld's logged allocation (so the schedule's
        # own errors do not enter): the fixed lag after the launch delay, and the sample clock
        launch = sim_settings(rec)["launch_delay_s"]
        over_at = alloc + launch + job["oom_after_s"]
        clock = SimpleNamespace(mem_sample_s=svr.MEM_SAMPLE_S, mem_sample_phase_s=svr.MEM_SAMPLE_PHASE_S,
                          oom_kill_end_s=svr.OOM_KILL_END_S)
        rows.append({
            "fixed_lag_err_s": over_at + svr.OOM_KILL_LAG_S - ends[jid],
            "sample_clock_err_s": oom_kill_at(alloc, over_at, clock) - ends[jid],
            "fixed_lag_same_second": int(over_at + svr.OOM_KILL_LAG_S) == int(ends[jid]),
            "sample_clock_same_second": int(oom_kill_at(alloc, over_at, clock)) == int(ends[jid]),
            "id": rec["id"], "job": jid, "label": job["label"], "oom_after_s": job["oom_after_s"],
            "alloc": alloc, "first_sample": first, "kill": ev["kill"], "end": ends[jid],
            "task": ev.get("task"),
            # the samples' phase: the kill sample less whole seconds from the first sample
            "phase_from_alloc_s": None if first is None else (ev["kill"] - alloc) % 1.0,
            "kill_after_oom_s": ev["kill"] - (alloc + job["oom_after_s"]),
            "last_under_after_oom_s": None if not under else under[-1] - (alloc + job["oom_after_s"]),
            "end_after_kill_s": ends[jid] - ev["kill"],
            "end_after_oom_s": ends[jid] - (alloc + job["oom_after_s"]),
        })
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", action="store_true")
    args = ap.parse_args()
    every = [r for rec in load_recordings(None) for r in kills(rec)]
    if args.rows:
        print("id job label oom_after_s | kill-alloc phase | kill-(alloc+oom_after) | last under-(alloc+oom_after) | end-kill")
        for r in every:
            print(f"{r['id']} {r['job']} {r['label']} {r['oom_after_s']} | {r['phase_from_alloc_s']:.3f} | "
                  f"{r['kill_after_oom_s']:+.3f} | {r['last_under_after_oom_s']:+.3f} | {r['end_after_kill_s']:.3f} | "
                  f"model - log: fixed lag {r['fixed_lag_err_s']:+.3f}, sample clock {r['sample_clock_err_s']:+.3f}")

    def rng(key: str) -> str:
        v = sorted(r[key] for r in every if r[key] is not None)
        return f"{v[0]:.3f} / {statistics.median(v):.3f} / {v[-1]:.3f}"

    print(f"{len(every)} OOM kills in {len({r['id'] for r in every})} slurmd-logged runs (min / median / max, s):")
    for key in ("phase_from_alloc_s", "kill_after_oom_s", "last_under_after_oom_s", "end_after_kill_s", "end_after_oom_s"):
        print(f"  {key}: {rng(key)}")
    for model in ("fixed_lag", "sample_clock"):
        err = [abs(r[f"{model}_err_s"]) for r in every]
        print(f"  {model} (end from slurmctld's allocation) - logged end: |error| median {statistics.median(err):.3f} s, "
              f"mean {statistics.mean(err):.3f} s, max {max(err):.3f} s; within 0.1 s {sum(e <= 0.1 for e in err)} of "
              f"{len(err)}; in the logged second {sum(r[f'{model}_same_second'] for r in every)} of {len(err)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
