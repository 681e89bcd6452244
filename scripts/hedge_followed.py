"""Issue 38, sixth round's diagnostic: which learner the fifth round's top level followed, per
tuning window, and why a draw between the back-off and the panel scores between them.

Replays one cluster to 2021-06-10 (nothing later is read) with the fifth round's frozen
``h-win-draw`` and records, for every job as it is told, the two learners' answers (the
back-off's and the panel mixture's, log10(1 + s)), the learner the top level follows then and
the pending floor. Per tuning window, on the warm jobs (the protocol's set), with the answers
before the floor (what the fifth round's ``win`` loss compared) and after it (what the job was
told, what the score sees): the share of jobs that followed the panel, the share the panel was
nearer the wait, the median |log10 error| of the back-off's answer, the panel's and the answer
followed, both learners' on the jobs where the panel was followed, and how often the floor
binds (results: docs/results/learn.md, "Issue 38, sixth round")::

    python scripts/hedge_followed.py graham    # and cedar
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from hedge_hindsight import Told, recording  # noqa: E402

from asad.bench import predictors as bench  # noqa: E402
from asad.bench import rolling  # noqa: E402

WINDOWS = ("2021-04-29..2021-05-20", "2021-05-20..2021-06-10")
DRAW = {"hedge_top": "learners", "hedge_top_combine": "draw", "hedge_top_loss": "win", "hedge_top_eta": 1}


def main(argv: list[str]) -> int:
    cluster = argv[0] if argv else "graham"
    jobs = bench.load_jobs(bench.DEFAULT_DATA, cluster, None, "2021-06-10", key_config=bench.KEY_CONFIGS["account"])
    t0 = time.process_time()
    with recording() as logs:
        replayed = bench.replay(jobs, [("h-win-draw", "hedge", DRAW)], seed=0)
    log: dict[int, Told] = logs[0][0]
    print(f"[{cluster}] {len(jobs)} jobs replayed to 2021-06-10 in {time.process_time() - t0:.0f} CPU s")
    warm = replayed["warm"]
    y = np.log10(1.0 + jobs.wait_s)
    print("window: warm jobs / followed the panel % / panel nearer % / median |log10 e| of the back-off,"
          " the panel, the answer followed / back-off and panel where the panel was followed")
    for text in WINDOWS:
        lo, hi = rolling.parse_window(text)
        idx = [j for j in np.nonzero(warm & (jobs.eligible_s >= lo) & (jobs.eligible_s < hi))[0] if j in log]
        b = np.array([log[j].backoff for j in idx])
        p = np.array([log[j].panel for j in idx])
        f = np.array([log[j].followed for j in idx])
        floor = np.array([log[j].floor for j in idx])
        t = y[idx]
        on_panel = f == 1
        for name, (bb, pp) in (("before the floor", (b, p)),
                               ("after the floor (as told)", (np.maximum(b, floor), np.maximum(p, floor)))):
            eb, ep = np.abs(bb - t), np.abs(pp - t)
            ef = np.where(f == 0, eb, ep)
            nearer = float(np.mean(ep < eb)) if len(idx) else math.nan
            print(f"  {text} {name}: {len(idx)} / {100 * on_panel.mean():.1f} / {100 * nearer:.1f} / "
                  f"{np.median(eb):.3f} {np.median(ep):.3f} {np.median(ef):.3f} / "
                  f"{np.median(eb[on_panel]):.3f} {np.median(ep[on_panel]):.3f}  (ties {100 * np.mean(ep == eb):.1f} %)")
        floored = (floor > np.minimum(b, p))
        print(f"    the floor binds one learner or both on {100 * floored.mean():.1f} % of these jobs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
