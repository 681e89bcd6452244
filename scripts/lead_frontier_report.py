#!/usr/bin/env python3
"""Read scripts/lead_frontier.py's rows: the hidden share of per-stage's inter-stage wait and the
core-hours over per-stage, for each uniform lead, and the hindsight choices.

    scripts/lead_frontier_report.py DIR [--budget 0.02] [--write-tables]

Groups a lead can be chosen for, in hindsight, from the uniform-lead runs:
- ``key``: the successor's geometry key (asad's: nodes, CPUs, walltime bucket), one lead per key
  for every cell and seed (bound (a));
- ``key+wide-pred``: the same, split by whether the predecessor is at least as wide as the successor
  (bound (a) with that feature);
- ``boundary``: one lead per (seed, cell, stage) (bound (b): an oracle that knows each boundary's
  outcome).
Per group, the choice minimises ``wait + lam * idle core-s`` over the grid, read per boundary from the
run with that lead everywhere (this ignores how a lead at one boundary moves the next boundary's
timeline and the other cells' queue: the re-simulation of the chosen table, ``lead_frontier.py
--boundary-leads``, is the figure; the estimate is printed beside it). ``lam`` is swept and the
choice with the most hidden wait within the core-hour budget kept.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from asad.bench.strategies import CORES_PER_NODE, EXAMPLES, SERIAL_FRACTION, scale_spec
from asad.learn.geometry import geometry_key
from asad.spec.load import load_workflow

WIDE = 28
LAMS = [0.0, 0.001, 0.003, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 3.0, 1e9]


def load_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def stage_specs() -> dict[str, dict]:
    out = {}
    for wf in SERIAL_FRACTION:
        for cores in (28, 56, 112):
            spec = scale_spec(load_workflow(EXAMPLES / f"{wf}.yaml"), cores, CORES_PER_NODE["hpc2n"], SERIAL_FRACTION[wf])
            out[spec.name] = {st.name: st for st in spec.stages}
            out[spec.name]["__spec__"] = spec
    return out


def boundary_group(specs: dict, cell: str, stage: str, kind: str) -> str | None:
    """The group a wide successor's lead is chosen for; None for a first or narrow stage."""
    spec = specs[cell]["__spec__"]
    st = specs[cell][stage]
    preds = spec.predecessors(stage)
    if not preds or st.cpus < WIDE:
        return None
    key = geometry_key(nodes=st.nodes, cpus=st.cpus, time_limit_s=st.time_s)
    if kind == "key":
        return key
    wide_pred = max(specs[cell][p].cpus for p in preds) >= st.cpus
    return f"{key}|{'wide-pred' if wide_pred else 'narrow-pred'}"


def group_of(specs: dict, b: tuple, kind: str) -> str:
    """The group boundary ``b`` = (seed, cell, stage) takes its lead from."""
    if kind == "boundary":
        return f"{b[0]}@{b[1]}/{b[2]}"
    return boundary_group(specs, b[1], b[2], "key" if kind == "key" else "feature")


def choose(per_b: dict, group, leads: list[float], lam: float) -> tuple[dict, float, float]:  # noqa: ANN001
    """Per group, the lead of the grid least in ``wait + lam * idle core-s`` summed over the group's
    boundaries (``per_b[b][lead] = (perceived wait, idle core-s)``): (choice by group, the chosen
    boundaries' wait, their idle core-s)."""
    groups: dict[str, list[tuple]] = defaultdict(list)
    for b in per_b:
        groups[group(b)].append(b)
    choice, wait, idle = {}, 0.0, 0.0
    for g, bs in groups.items():
        lead = min(leads, key=lambda L: (sum(per_b[b][L][0] + lam * per_b[b][L][1] for b in bs), L))
        choice[g] = lead
        wait += sum(per_b[b][lead][0] for b in bs)
        idle += sum(per_b[b][lead][1] for b in bs)
    return choice, wait, idle


def choose_within(per_b: dict, group, leads: list[float], budget_core_s: float, unit: float = 60.0
                  ) -> tuple[dict, float, float]:  # noqa: ANN001
    """Per group, the lead that leaves the least wait summed over all groups with their idle
    core-seconds (rounded up to ``unit``) within ``budget_core_s``: the exact multiple-choice
    knapsack over the grid, by dynamic programming on the idle spent. (choice, wait, idle)."""
    groups: dict[str, list[tuple]] = defaultdict(list)
    for b in per_b:
        groups[group(b)].append(b)
    cap = int(budget_core_s // unit)
    inf = float("inf")
    best = [0.0] + [inf] * cap  # least wait with exactly this many idle units spent
    picks: list[list[tuple[int, float]]] = []  # per group, per units spent: (units before, lead)
    names = sorted(groups)
    for g in names:
        options = []
        for lead in leads:
            wait = sum(per_b[b][lead][0] for b in groups[g])
            idle = sum(per_b[b][lead][1] for b in groups[g])
            options.append((int(-(-idle // unit)), wait, lead))
        new, pick = [inf] * (cap + 1), [(-1, 0.0)] * (cap + 1)
        for used in range(cap + 1):
            if best[used] == inf:
                continue
            for units, wait, lead in options:
                if used + units <= cap and best[used] + wait < new[used + units]:
                    new[used + units], pick[used + units] = best[used] + wait, (used, lead)
        best = new
        picks.append(pick)
    used = min(range(cap + 1), key=lambda u: (best[u], u))
    choice = {}
    for g, pick in zip(reversed(names), reversed(picks)):
        before, lead = pick[used]
        choice[g] = lead
        used = before
    wait = sum(per_b[b][choice[g]][0] for g in names for b in groups[g])
    idle = sum(per_b[b][choice[g]][1] for g in names for b in groups[g])
    return choice, wait, idle


def short(group: str) -> str:
    """'...|nodes=2|cpus=56|walltime<=1h|narrow-pred' -> '56c/1h/narrow-pred'."""
    parts = dict(p.split("=", 1) for p in group.split("|") if "=" in p)
    wt = group.split("walltime")[1].split("|")[0].lstrip("<=") if "walltime" in group else ""
    tail = group.rsplit("|", 1)[1] if group.endswith("-pred") else ""
    return "/".join(x for x in (f"{parts.get('cpus', '?')}c", wt, tail) if x)


def totals(rows: list[dict], variant: str) -> tuple[float, float, dict]:
    """(inter-stage wait, core-hours, makespans by (seed, cell)) of a variant over its rows."""
    wait = core = 0.0
    seen, makespans = set(), {}
    for r in rows:
        if r["variant"] != variant:
            continue
        if r["after"]:
            wait += r["perceived_wait_s"] or 0.0
        if (r["seed"], r["cell"]) not in seen:
            seen.add((r["seed"], r["cell"]))
            core += r["cell_core_hours"]
            makespans[(r["seed"], r["cell"])] = r["makespan_s"]
    return wait, core, makespans


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir", type=Path)
    p.add_argument("--budget", type=float, default=0.02)
    p.add_argument("--write-tables", action="store_true", help="write DIR/table-GROUP.json for re-simulation")
    args = p.parse_args()
    rows = load_rows(args.dir / "rows.jsonl")
    specs = stage_specs()
    ps_wait, ps_core, _ = totals(rows, "per-stage")
    seeds = sorted({r["seed"] for r in rows})
    print(f"seeds {seeds}, {len({r['cell'] for r in rows})} cells; per-stage: inter-stage wait {ps_wait:.0f} s, "
          f"{ps_core:.1f} core-h")
    leads = sorted({float(r["variant"][5:]) for r in rows if r["variant"].startswith("lead-")})
    print("\nuniform lead for every wide successor (narrow successors afterok):")
    print("| variant | hides | core-h vs per-stage |\n|---|---:|---:|")
    for v in ["chain", "auto", *[f"lead-{lead:g}" for lead in leads]]:
        w, c, _ = totals(rows, v)
        failed = sorted({(r["seed"], r["cell"]) for r in rows if r["variant"] == v and r["state"] != "COMPLETED"})
        ran = sorted({r["seed"] for r in rows if r["variant"] == v})
        if ran and ran != seeds:
            print(f"| {v} | run on seeds {ran} only: not comparable | |")
        elif failed:
            print(f"| {v} | workflows failed: {failed} | {c / ps_core - 1:+.2%} |")
        elif c:
            print(f"| {v} | {1 - w / ps_wait:.1%} | {c / ps_core - 1:+.2%} |")
    # per boundary: (wait, idle core-s) under each lead; the narrow and first stages' rows of the
    # lead-0 run stand for them (they are afterok in every run)
    per_b: dict[tuple, dict[float, tuple[float, float]]] = defaultdict(dict)
    base_wait = 0.0
    for r in rows:
        if not r["variant"].startswith("lead-"):
            continue
        lead = float(r["variant"][5:])
        if boundary_group(specs, r["cell"], r["stage"], "key") is None:
            if lead == 0.0 and r["after"]:
                base_wait += r["perceived_wait_s"] or 0.0
            continue
        # a workflow that failed under this lead: no choice of it is allowed
        wait = (r["perceived_wait_s"] or 0.0) if r["state"] == "COMPLETED" else float("inf")
        per_b[(r["seed"], r["cell"], r["stage"])][lead] = (wait, r["idle_core_s"])
    # a run stopped part way (some seeds lack some leads) is read on the leads every boundary has
    complete = [lead for lead in leads if all(lead in by_lead for by_lead in per_b.values())]
    if complete != leads:
        print(f"\nleads not run at every boundary, left out of the hindsight choices: "
              f"{', '.join(f'{lead:g}' for lead in leads if lead not in complete)}")
        leads = complete
    _, lead0_core, _ = totals(rows, "lead-0")
    for kind in ("key", "key+wide-pred", "boundary"):
        print(f"\nhindsight choice per {kind} (estimated from the uniform runs, budget {args.budget:+.0%}):")
        print("| lam | hides (est.) | core-h vs per-stage (est.) | leads |\n|---:|---:|---:|---|")
        best = None
        for lam in LAMS:
            choice, wait, idle = choose(per_b, lambda b: group_of(specs, b, kind), leads, lam)
            wait += base_wait
            hidden, extra = 1 - wait / ps_wait, (lead0_core + idle / 3600) / ps_core - 1
            shown = (f"{sum(1 for v in choice.values() if v)} of {len(choice)} boundaries led"
                     if kind == "boundary" else ", ".join(f"{short(g)}={lead:g}" for g, lead in sorted(choice.items())))
            print(f"| {lam:g} | {hidden:.1%} | {extra:+.2%} | {shown} |")
            if extra <= args.budget and (best is None or hidden > best[0]):
                best = (hidden, extra, lam, choice)
        budget_core_s = max(0.0, (args.budget + 1) * ps_core - lead0_core) * 3600
        choice, wait, idle = choose_within(per_b, lambda b: group_of(specs, b, kind), leads, budget_core_s)
        hidden, extra = 1 - (wait + base_wait) / ps_wait, (lead0_core + idle / 3600) / ps_core - 1
        best = (hidden, extra, "knapsack", choice)
        led = sum(1 for v in choice.values() if v)
        print(f"best within budget (exact over the grid): hides {hidden:.1%} (est.) at {extra:+.2%}; "
              f"{led} of {len(choice)} groups led"
              + ("" if kind == "boundary" else ": " + ", ".join(f"{short(g)}={x:g}" for g, x in sorted(choice.items()) if x)))
        if args.write_tables:
            table = {}
            for b in per_b:
                table[f"{b[0]}@{b[1]}/{b[2]}"] = best[3][group_of(specs, b, kind)]
            (args.dir / f"table-{kind}.json").write_text(json.dumps(table, indent=1))
    table_rows = args.dir / "rows-table.jsonl"
    if table_rows.exists():
        trs = load_rows(table_rows)
        for name in sorted({r["variant"] for r in trs}):
            w, c, _ = totals(trs, name)
            print(f"\nre-simulated {name}: hides {1 - w / ps_wait:.1%} at {c / ps_core - 1:+.2%} core-h")


if __name__ == "__main__":
    main()
