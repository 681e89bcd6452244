"""The fixed replay's OOM-kill instants against slurmctld.log's (issue 37, t37f): for each job
killed for memory in a recording with a kept slurmctld.log whose replayed start is in Slurm's
second, the replay's end (sub-second, the simulator's own) minus slurmctld's "_job_complete"
for it. The replay puts the kill at start + launch delay + oom_after_s + OOM_KILL_LAG_S (1.5 s).

Usage: python scripts/sim_oom_kill_instants.py
"""

from __future__ import annotations

import gzip
import re
import statistics
from datetime import datetime, timezone

from asad.bench.sim_vs_real import load_recordings, replay
from asad.bench.sim_vs_real_logs import log_path
from asad.slurm.sim import simulator as sim_mod

_END = re.compile(r"^\[([0-9T:.-]+)\] _job_complete: JobId=(\d+) done")


def main() -> int:
    original = sim_mod.Simulator._finish
    ends: dict[str, float] = {}

    def finish(self, job, state, t):  # noqa: ANN001, ANN202
        ends[job.name] = t
        return original(self, job, state, t)

    sim_mod.Simulator._finish = finish
    diffs = []
    for rec in load_recordings(None):
        path = log_path(rec)
        ooms = {str(j["job_id"]): j for j in rec["jobs"] if j.get("oom_after_s") is not None}
        if path is None or not ooms:
            continue
        ends.clear()
        sim = replay(rec)
        logged = {}
        with gzip.open(path, "rt", errors="replace") as fh:
            for line in fh:
                m = _END.match(line)
                if m and m.group(2) in ooms:
                    logged[m.group(2)] = datetime.fromisoformat(m.group(1)).replace(tzinfo=timezone.utc).timestamp()
        got = []
        for jid, job in ooms.items():
            if jid in logged and sim[job["label"]]["start"] == job["start"] and job["label"] in ends:
                got.append(round(ends[job["label"]] - logged[jid], 3))
        diffs += got
        print(f"{rec['id']}: {len(got)} OOM kills with the start in Slurm's second; replay - Slurm (s): {sorted(got)}")
    sim_mod.Simulator._finish = original
    if diffs:
        print(f"all {len(diffs)}: median {statistics.median(diffs):+.3f} s, min {min(diffs):+.3f}, max {max(diffs):+.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
