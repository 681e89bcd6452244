"""Each job end's path read directly from the nodes' slurmd.logs (issue 37, ninth session).

Recordings made with ``ASAD_SLURMD_DEBUG=debug4`` keep each node's slurmd.log
(``tests/data/sim_vs_real/logs/ID.slurmd-nK.log.gz``). In Slurm 22.05.8 (tag
``slurm-22-05-8-1``) slurmd's ``_rpc_terminate_job`` (src/slurmd/slurmd/req.c) counts the job's
steps it can signal with SIGTERM (``_kill_all_active_steps``: a connect to each step's socket in
the spool dir, then REQUEST_SIGNAL_CONTAINER); with none and no Epilog it logs
``debug4: sent ALREADY_COMPLETE`` and answers slurmctld ESLURMD_KILL_JOB_ALREADY_COMPLETE (the
*reply* path), else ``debug4: sent SUCCESS``, waits for the step to go
(``_pause_for_job_completion``) and sends MESSAGE_EPILOG_COMPLETE, logged as
``JobId=N: sent epilog complete msg`` (the *epilog* path). Neither "sent" line names the job, so
the label is taken from the lines that do: ``No steps in jobid N to send signal 15`` (reply) or
``container signal 15 to StepId=N.batch`` followed by ``JobId=N: sent epilog complete msg``
(epilog), on the job's batch host (the node that logged ``Launching batch job N``).

Per end it also reads the instants that race (all on one clock, the machine's):
``done``: the batch step's slurmstepd logs "job N completed with slurm_rc" and sends
REQUEST_COMPLETE_BATCH_SCRIPT (``batch_finish``, mgr.c); ``term``: slurmd's
``_rpc_terminate_job`` starts; ``cont``/``sigterm``: its SIGCONT and SIGTERM looks for the step;
``shutdown``: the stepd's message thread sees the shutdown that follows slurmctld's reply and
unlinks its socket ("false, shutdown", slurmstepd/req.c ``_msg_socket_readable``); ``exit``:
"done with job". And from slurmctld.log ``ctld``: "_job_complete: JobId=N done".

Usage: python scripts/end_path_direct.py [--rows] [RECORDING_ID ...]
"""

from __future__ import annotations

import argparse
import gzip
import re
import statistics
from datetime import datetime, timezone
from pathlib import Path

from asad.bench.sim_vs_real import load_recordings
from asad.bench.sim_vs_real_logs import LOG_DIR, log_path

_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\] (?:\[(\d+)\.(\w+)\] )?(.*)$")
# slurmd's own lines (no [N.step] prefix) that name the job
_SLURMD = (
    ("launch", re.compile(r"^Launching batch job (\d+) ")),
    ("term", re.compile(r"_rpc_terminate_job: uid = \d+ JobId=(\d+)")),
    ("timelimit", re.compile(r"_rpc_timelimit: uid = \d+ JobId=(\d+)")),
    ("cont", re.compile(r"container signal 18 to StepId=(\d+)\.batch")),
    ("cont_none", re.compile(r"No steps in jobid (\d+) (?:to send signal|were able to be signaled with) 18")),
    ("sigterm", re.compile(r"container signal 15 to StepId=(\d+)\.batch")),
    ("sigterm_none", re.compile(r"No steps in jobid (\d+) (?:to send signal|were able to be signaled with) 15")),
    ("epilog_msg", re.compile(r"JobId=(\d+): sent epilog complete msg")),
)
# the batch step's slurmstepd, prefixed [N.batch]
_STEPD = (
    ("done", re.compile(r"^job \d+ completed with slurm_rc")),
    ("shutdown", re.compile(r"^debug2:\s+false, shutdown")),
    ("exit", re.compile(r"^done with job")),
    ("cont_handled", re.compile(r"^Sent signal 18 to StepId")),
)
_CTLD_END = re.compile(r"_job_complete: JobId=(\d+) done")
_CTLD_TL = re.compile(r"Time limit exhausted for JobId=(\d+)")


def _stamp(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def slurmd_logs(rec: dict) -> list[Path]:
    return sorted(LOG_DIR.glob(f"{rec['id']}.slurmd-n*.log.gz"))


def node_events(path: Path, ids: set[str]) -> dict[str, dict[str, float]]:
    """Per job id: the first instant of each event kind in one node's slurmd.log."""
    out: dict[str, dict[str, float]] = {}
    with gzip.open(path, "rt", errors="replace") as fh:
        for line in fh:
            m = _LINE.match(line)
            if not m:
                continue
            t, step_job, step, text = _stamp(m.group(1)), m.group(2), m.group(3), m.group(4)
            if step_job is not None:
                if step == "batch" and step_job in ids:
                    for kind, pat in _STEPD:
                        if pat.search(text):
                            out.setdefault(step_job, {}).setdefault(kind, t)
                continue
            for kind, pat in _SLURMD:
                hit = pat.search(text)
                if hit and hit.group(1) in ids:
                    out.setdefault(hit.group(1), {}).setdefault(kind, t)
                    break
    return out


def path_of(ev: dict[str, float]) -> str:
    """One node's answer to the job's REQUEST_TERMINATE_JOB: "epilog" (it sent MESSAGE_EPILOG_COMPLETE),
    "reply" (its SIGTERM look found no step: ALREADY_COMPLETE; or, in a log at debug level, which has
    no debug2 lines, a terminate request with no epilog message after it), "?" otherwise."""
    if "epilog_msg" in ev:
        return "epilog"
    if "sigterm_none" in ev:
        return "reply"
    if "term" in ev and "sigterm" not in ev:
        return "reply"
    return "?"


def measured(recs: list[dict]) -> dict:
    """Over the recordings with slurmd.logs: the share of the racing ends (not killed at their time
    limit) that took the reply, and the time-limit kills' delay to their epilog message
    (min, median, max, seconds) with how many of them took the epilog path."""
    every = [r for rec in recs for r in ends(rec)]
    race = [r for r in every if r["tl_to_epilog"] is None and r["path"] in ("reply", "epilog")]
    tl = [r for r in every if r["tl_to_epilog"] is not None]
    lat = sorted(r["tl_to_epilog"] for r in tl)
    # a racing end by the epilog message: slurmctld's "_job_complete" to slurmd's message
    epi = sorted(r["epilog_msg"] - r["ctld"] for r in race
                 if r["path"] == "epilog" and r["epilog_msg"] is not None and r["ctld"] is not None)
    return {"race_epilog_s": (epi[0], statistics.median(epi), epi[-1]) if epi else None,
            "race_ends": len(race), "replies": sum(r["path"] == "reply" for r in race),
            "kills": len(tl), "kills_by_epilog": sum(r["path"] == "epilog" for r in tl),
            "kill_to_epilog_s": (lat[0], statistics.median(lat), lat[-1]) if lat else None}


def ends(rec: dict) -> list[dict]:
    """One row per job that ran: its batch host, the path slurmd took there, the instants."""
    ids = {str(j["job_id"]): j for j in rec["jobs"]}
    per_node = {p.name.split(".slurmd-")[1].split(".")[0]: node_events(p, set(ids)) for p in slurmd_logs(rec)}
    ctld: dict[str, float] = {}
    ctld_tl: dict[str, float] = {}
    lp = log_path(rec)
    if lp is not None:
        with gzip.open(lp, "rt", errors="replace") as fh:
            for line in fh:
                m = _LINE.match(line)
                if not m:
                    continue
                for pat, into in ((_CTLD_END, ctld), (_CTLD_TL, ctld_tl)):
                    hit = pat.search(m.group(4))
                    if hit and hit.group(1) in ids:
                        into.setdefault(hit.group(1), _stamp(m.group(1)))
    origin = rec["timers"]["loop_start"]
    rows = []
    for jid, job in ids.items():
        host = next((n for n, ev in per_node.items() if "launch" in ev.get(jid, {})), None)
        if host is None:
            continue
        ev = per_node[host][jid]
        path = path_of(ev)
        others = sorted(n for n, e in per_node.items() if n != host and "term" in e.get(jid, {}))
        other_paths = ["epilog" if "epilog_msg" in per_node[n][jid] else "reply" for n in others]

        def rel(kind: str) -> float | None:
            return None if kind not in ev or "done" not in ev else round(ev[kind] - ev["done"], 4)

        rows.append({"log": rec["id"], "label": job["label"], "job_id": jid, "host": host, "path": path,
                     "state": job["state"], "nodes": job["nodes"], "oom": job.get("oom_after_s") is not None,
                     "end_t": None if "done" not in ev else round(ev["done"] - origin, 3),
                     "ctld": None if jid not in ctld or "done" not in ev else round(ctld[jid] - ev["done"], 4),
                     "term": rel("term"), "cont": rel("cont") if "cont" in ev else None,
                     "cont_handled": rel("cont_handled"),
                     "sigterm": rel("sigterm") if "sigterm" in ev else rel("sigterm_none"),
                     "shutdown": rel("shutdown"), "exit": rel("exit"), "epilog_msg": rel("epilog_msg"),
                     "timelimit": "timelimit" in ev, "other_nodes": other_paths,
                     # a time-limit kill: from slurmctld's "Time limit exhausted" to the last node's
                     # epilog message (what brings the nodes back)
                     "tl_to_epilog": None if jid not in ctld_tl else _last_epilog(per_node, jid, ctld_tl[jid])})
    return sorted(rows, key=lambda r: (r["end_t"] is None, r["end_t"] or 0))


def _last_epilog(per_node: dict, jid: str, t_tl: float) -> float | None:
    got = [e[jid]["epilog_msg"] for e in per_node.values() if "epilog_msg" in e.get(jid, {})]
    return round(max(got) - t_tl, 4) if got else None


def _med(xs: list[float | None]) -> str:
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return f"{1000 * statistics.median(xs):.1f} ({1000 * min(xs):.1f}-{1000 * max(xs):.1f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", action="store_true", help="print every end")
    ap.add_argument("ids", nargs="*")
    args = ap.parse_args()
    recs = [r for r in load_recordings(None) if slurmd_logs(r) and (not args.ids or r["id"] in args.ids)]
    every = []
    for rec in recs:
        got = ends(rec)
        every += got
        n = {p: sum(r["path"] == p for r in got) for p in ("reply", "epilog", "?")}
        print(f"{rec['id']}: {len(got)} ends: reply {n['reply']}, epilog {n['epilog']}, unlabelled {n['?']}")
    if args.rows:
        print("\nlog | job | host | state | path | ctld | term | cont | cont handled | sigterm | shutdown | exit | "
              "epilog msg (ms after the stepd's 'completed') | other nodes")
        for r in every:
            f = lambda k: "-" if r[k] is None else f"{1000 * r[k]:.1f}"  # noqa: E731
            print(f"{r['log']} | {r['label']} | {r['host']} | {r['state']}{' TL' if r['timelimit'] else ''} | "
                  f"{r['path']} | {f('ctld')} | {f('term')} | {f('cont')} | {f('cont_handled')} | {f('sigterm')} | "
                  f"{f('shutdown')} | {f('exit')} | {f('epilog_msg')} | {','.join(r['other_nodes'])}")
    print("\nms after the stepd's 'completed' line, median (min-max), by path:")
    for p in ("reply", "epilog"):
        sub = [r for r in every if r["path"] == p]
        print(f"  {p} ({len(sub)}): ctld {_med([r['ctld'] for r in sub])}; term {_med([r['term'] for r in sub])}; "
              f"sigterm look {_med([r['sigterm'] for r in sub])}; socket shut {_med([r['shutdown'] for r in sub])}; "
              f"stepd exit {_med([r['exit'] for r in sub])}; epilog msg {_med([r['epilog_msg'] for r in sub])}")
    print(f"\nmeasured: {measured(recs)}")
    tl = [r["tl_to_epilog"] for r in every if r["tl_to_epilog"] is not None]
    print(f"\ntime-limit kills ({len(tl)}): 'Time limit exhausted' to the last epilog message, ms: {_med(tl)}; "
          f"paths {sorted((r['path'] for r in every if r['tl_to_epilog'] is not None))}")
    race = [r for r in every if r["tl_to_epilog"] is None and r["path"] in ("reply", "epilog")]
    print(f"other ends ({len(race)}): reply {sum(r['path'] == 'reply' for r in race)}, "
          f"epilog {sum(r['path'] == 'epilog' for r in race)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
