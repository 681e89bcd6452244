"""The replays of the slurmctld-logged recordings with each job's submission at the instant the
log gives (``_slurm_rpc_submit_batch_job``, to the millisecond) instead of ``submit_instants``'
estimate (the recorder's offset plus one sbatch latency per run, the midpoint of the range the
whole seconds allow) (issue 37, g37f). Why: in multifactor 6 under ``bf_poll`` the first
difference (m08 a second early) is the estimate placing m08's submission 24 ms before the idle
backfill thread's look at 32.256 s where the log has it 28 ms after. Per recording and mode
(grid, bf_poll): the estimate's error (median / max |estimate - log|), then tau and jobs in
Slurm's second with the estimate and with the logged instants.

Usage: python scripts/sim_logged_submits.py [ID ...]
"""

from __future__ import annotations

import datetime
import gzip
import re
import sys

from asad.bench.sim_vs_real import compare, load_recordings, replay, submit_instants
from asad.bench.sim_vs_real_logs import log_path

MODES = {"grid": {}, "bf_poll": {"bf_poll": True, "bf_plan_all": True}}
SUBMIT = re.compile(r"^\[(\S+)\] _slurm_rpc_submit_batch_job: JobId=(\d+) ")


def logged_submits(rec: dict) -> dict[str, float] | None:
    """Each job's submission instant from the recording's slurmctld.log (None: no log). The log
    holds earlier runs too; job ids are unique within a log, so the recording's ids pick its own."""
    path = log_path(rec)
    if path is None:
        return None
    label = {j["job_id"]: j["label"] for j in rec["jobs"]}
    out: dict[str, float] = {}
    with gzip.open(path, "rt") as fh:
        for line in fh:
            m = SUBMIT.match(line)
            if m and int(m.group(2)) in label:
                ts = datetime.datetime.fromisoformat(m.group(1)).replace(tzinfo=datetime.timezone.utc)
                out[label[int(m.group(2))]] = ts.timestamp()
    return out if len(out) == len(label) else None


def in_second(rec: dict, sim: dict) -> int:
    return sum(1 for j in rec["jobs"] if j["start"] is not None and sim[j["label"]]["start"] == j["start"])


def main() -> int:
    ids = sys.argv[1:]
    print("recording | mode | estimate's error median / max (s) | tau, in-second: estimate | logged")
    print("|".join(["---"] * 4))
    for rec in load_recordings(None):
        if ids and rec["id"] not in ids:
            continue
        logged = logged_submits(rec)
        if logged is None:
            continue
        est = submit_instants(rec)
        errs = sorted(abs(est[k] - logged[k]) for k in logged)
        for mode, over in MODES.items():
            a = replay(rec, **over)
            b = replay(rec, submit_at=logged, **over)
            ca, cb = compare(rec, a), compare(rec, b)
            print(f"{rec['id']} | {mode} | {errs[len(errs) // 2]:.3f} / {errs[-1]:.3f} | "
                  f"{ca['kendall_tau']:.3f}, {in_second(rec, a)}, {ca['median_abs_start_diff_s']} s | {cb['kendall_tau']:.3f}, {in_second(rec, b)}, {cb['median_abs_start_diff_s']} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
