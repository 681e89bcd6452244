"""The background loop's passes in each kept slurmctld.log against the fixed replay's tick grid
(issue 37, t37f): the phase of every "sched: Allocate" logged at least 0.15 s after the last job
end or submission (a loop pass, not an epilog message's or a submission's), relative to
``loop_start + k * LOOP_TICK_S``, as "second:phase" (phase in s, -0.5..0.5).

Usage: python scripts/sim_loop_pass_phase.py [ID ...]
"""

from __future__ import annotations

import gzip
import re
import sys
from datetime import datetime, timezone

from asad.bench.sim_vs_real import LOOP_TICK_S, load_recordings
from asad.bench.sim_vs_real_logs import log_path

_LINE = re.compile(r"^\[([0-9T:.-]+)\] (?:sched: Allocate JobId=(\d+)|_job_complete: JobId=(\d+) done"
                   r"|Time limit exhausted for JobId=(\d+)|_slurm_rpc_submit_batch_job: JobId=(\d+))")


def loop_pass_phases(rec: dict) -> list[tuple[float, float]]:
    path = log_path(rec)
    if path is None:
        return []
    origin = rec["timers"]["loop_start"]
    ids = {str(j["job_id"]) for j in rec["jobs"]}
    out, last = [], None
    with gzip.open(path, "rt", errors="replace") as fh:
        for line in fh:
            m = _LINE.match(line)
            if not m:
                continue
            jid = next(g for g in m.groups()[1:] if g is not None)
            t = datetime.fromisoformat(m.group(1)).replace(tzinfo=timezone.utc).timestamp() - origin
            if t < 0 or jid not in ids:
                continue
            if m.group(2) is None:
                last = t  # an end, a time-limit kill or a submission
            elif last is not None and t - last >= 0.15:
                out.append((t, ((t + 0.5) % LOOP_TICK_S) - 0.5))
    return out


def main(argv: list[str]) -> int:
    for rec in load_recordings(None):
        if argv and rec["id"] not in argv:
            continue
        got = loop_pass_phases(rec)
        if got:
            print(rec["id"], " ".join(f"{t:.0f}:{p:+.2f}" for t, p in got))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
