"""Where does ``hedge`` lose to ``median-backoff``? (issue 38's diagnosis, the tuning weeks only)

Replays one cluster up to ``--until`` (default 2021-06-10: nothing after the tuning weeks is read)
with ``median-backoff`` and hedge variants, records for every job what the hedge panel said
and how its group's weights stood when the job was told, and prints, on the window
``--window`` (default 2021-05-20..2021-06-10), warm jobs:

- each learner's median and mean |log10 error| (the score, and the loss Hedge bounds);
- each panel expert's median / mean |log10 error| on the same jobs (the oracle best-in-hindsight);
- the weight the mixture gave ``backoff`` and the dominant expert, per answering level;
- median error by answering level, cold vs warm, and whether a pending floor raised the answer.

    python scripts/diag_hedge.py --cluster graham --add 'h4=hedge:{}' --save /tmp/diag-graham.npz
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from asad.bench import predictors as bench
from asad.learn.hedge import PANEL, HedgePool

RECORD: dict[str, dict[int, tuple]] = {}


class RecordingHedge(HedgePool):
    """A HedgePool that keeps, per job told, the panel and its shares (diagnosis only)."""

    label = ""
    job = -1

    def told(self, key, now_s=None, pending_since_s=None, shifts=True):  # type: ignore[override]
        out = super().told(key, now_s, pending_since_s, shifts)
        if shifts and out is not None:
            panel = self.panel(key)
            if panel is not None:
                shares = dict(self.shares(panel))
                RECORD.setdefault(self.label, {})[RecordingHedge.job] = (
                    panel.values, tuple(shares.get(i, 0.0) for i in range(len(PANEL))), panel.stratum)
        return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cluster", default="graham")
    parser.add_argument("--until", default="2021-06-10")
    parser.add_argument("--window", default="2021-05-20..2021-06-10")
    parser.add_argument("--add", action="append", default=[])
    parser.add_argument("--save")
    args = parser.parse_args()
    predictors = [("median-backoff", "median-backoff", {})] + bench.parse_predictors("", args.add)[len(bench.DEFAULT_PREDICTORS):]
    if not args.add:
        predictors.append(("hedge", "hedge", {}))

    made: dict[str, RecordingHedge] = {}
    original = bench.make_pool

    def make_pool(kind, seed=0, **params):
        pool = original(kind, seed, **params)
        if isinstance(pool, HedgePool):
            rec = RecordingHedge(pool.config, seed=seed, kind=kind)
            made[str(len(made))] = rec
            return rec
        return pool

    bench.make_pool = make_pool
    jobs = bench.load_jobs(bench.DEFAULT_DATA, args.cluster, None, args.until, key_config=bench.KEY_CONFIGS["account"])
    hedge_labels = [lb for lb, kind, _ in predictors if kind == "hedge"]
    # label the recording pools in creation order (replay makes pools in predictor order)
    order = iter(hedge_labels)
    real_make = make_pool

    def labelled(kind, seed=0, **params):
        pool = real_make(kind, seed, **params)
        if isinstance(pool, RecordingHedge):
            pool.label = next(order)
        return pool

    bench.make_pool = labelled
    # the replay tells job j right after it checks ``warm[j]``; track j through the key lookups
    keys = jobs.key

    class Indexed(list):
        def __getitem__(self, i):  # noqa: D401 - the replay reads jobs.key[j] for job j first
            if isinstance(i, (int, np.integer)):
                RecordingHedge.job = int(i)
            return list.__getitem__(self, i)

    jobs.key = Indexed(keys)
    t0 = time.process_time()
    out = bench.replay(jobs, predictors, quantiles=bench.QUANTILES)
    cpu = time.process_time() - t0
    jobs.key = keys
    start, end = (float(np.datetime64(t, "s").astype(np.int64)) for t in args.window.split(".."))
    window = (jobs.eligible_s >= start) & (jobs.eligible_s < end)
    warm = out["warm"] & window
    y = np.log10(1.0 + jobs.wait_s)
    print(f"{args.cluster}: {len(jobs)} jobs replayed in {cpu:.0f} CPU s; window {args.window}: "
          f"{int(window.sum())} jobs, {int(warm.sum())} warm")
    print(f"{'learner':<16} {'med|e|':>7} {'mean|e|':>7} {'x3':>6} {'gap':>5}")
    errors = {}
    for label, _, _ in predictors:
        est = out["estimates"][label]
        e = np.abs(np.log10(1.0 + est) - y)
        errors[label] = e
        q = out["quantiles"][label][window & ~np.isnan(est)]
        cov = np.mean(jobs.wait_s[window & ~np.isnan(est)][:, None] <= q, axis=0)
        gap = float(np.max(np.abs(cov - np.asarray(bench.QUANTILES))))
        print(f"{label:<16} {np.median(e[warm]):7.3f} {np.mean(e[warm]):7.3f} {100 * np.mean(e[warm] <= math.log10(3)):6.1f} "
              f"{100 * gap:5.1f}")
    told_b = out["told"]["median-backoff"]
    floored = np.array([t is not None and str(t[1]).endswith(":p") for t in told_b])
    for label in hedge_labels:
        rec = RECORD.get(label, {})
        idx = np.array([j for j in np.flatnonzero(warm) if j in rec])
        values = np.array([[np.nan if v is None else v for v in rec[j][0]] for j in idx])
        shares = np.array([rec[j][1] for j in idx])
        print(f"\n[{label}] panel experts on the {len(idx)} warm jobs of the window: med|e| / mean|e| / share of weight")
        for i, name in enumerate(PANEL):
            e = np.abs(values[:, i] - y[idx])
            ok = ~np.isnan(e)
            print(f"  {name:<10} {np.median(e[ok]):.3f} / {np.mean(e[ok]):.3f} / mean share {np.mean(shares[:, i]):.3f}"
                  f" (dominant in {100 * np.mean(np.argmax(shares, axis=1) == i):.1f} %)")
        mixed = np.nansum(values * shares, axis=1)
        e_mix = np.abs(mixed - y[idx])
        print(f"  weighted mean of the panel, before the floor: {np.median(e_mix):.3f} / {np.mean(e_mix):.3f}")
        slots = np.array([str(rec[j][2]).split(":")[0] for j in idx])
        print("  by answering level (slot): n, med|e| hedge vs backoff, backoff share")
        for slot in sorted(set(slots)):
            m = slots == slot
            print(f"    slot {slot:<3} n {int(m.sum()):>6}  {np.median(errors[label][idx][m]):.3f} vs "
                  f"{np.median(errors['median-backoff'][idx][m]):.3f}   backoff share {np.mean(shares[m, 0]):.2f}")
        fl = floored[idx]
        print(f"  floored by the pending job (back-off's told): n {int(fl.sum())}: {np.median(errors[label][idx][fl]):.3f} "
              f"vs {np.median(errors['median-backoff'][idx][fl]):.3f}; unfloored {np.median(errors[label][idx][~fl]):.3f} "
              f"vs {np.median(errors['median-backoff'][idx][~fl]):.3f}")
    if args.save:
        np.savez_compressed(args.save, y=y, warm=out["warm"], window=window,
                            **{f"est_{lb}": out["estimates"][lb] for lb, _, _ in predictors})
    print(json.dumps({"cpu_s": round(cpu, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
