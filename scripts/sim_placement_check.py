"""Issue 37 (fidelity): does the simulator put jobs on the nodes Slurm put them on?

For every recording with node lists (`tests/data/sim_vs_real/*.json`, run 2 on), the fixed
replay (`asad.bench.sim_vs_real.replay`) is run with the simulator's node lists kept, and each
job's nodes are compared with Slurm's: over all jobs, and over the jobs the replay starts in
the same second as Slurm (where the two saw the same queue, so a different node list is a
placement rule or a race at that instant, not a schedule that had already parted). Slurm names
the nodes n1 … n5, the simulator main-0 … main-4 (the same order). It reads the recordings only;
it chooses nothing.

    python scripts/sim_placement_check.py [--show 3]
"""

from __future__ import annotations

import argparse
import glob
import json
import re
from pathlib import Path

RECORDINGS = Path(__file__).resolve().parent.parent / "tests" / "data" / "sim_vs_real"


def slurm_nodes(text: str) -> set[int]:
    """Slurm's hostlist of n<i> nodes ("n3", "n[1-2]", "n[1,3-4]") as node numbers."""
    bracket = re.fullmatch(r"n\[(.*)\]", text)
    if not bracket:
        return {int(text[1:])}
    out: set[int] = set()
    for part in bracket.group(1).split(","):
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


def sim_nodes(text: str) -> set[int]:
    """The simulator's node list ("main-0,main-2") as Slurm's node numbers (main-0 is n1)."""
    return {int(name.rsplit("-", 1)[1]) + 1 for name in text.split(",") if name}


def replay_with_nodes(rec: dict) -> dict[str, dict]:
    """The fixed replay's start/end/state per label, with the simulator's nodes as Slurm's numbers."""
    from asad.bench import sim_vs_real

    out = sim_vs_real.replay(rec, with_nodes=True)
    for row in out.values():
        row["nodes"] = sim_nodes(row["nodelist"])
    return out


def compare(rec: dict) -> dict:
    sim = replay_with_nodes(rec)
    t0 = min(job["submit"] for job in rec["jobs"])
    jobs = same_nodes = same_start = parted = 0
    examples = []
    for job in sorted(rec["jobs"], key=lambda j: j["start"] if j.get("start") is not None else float("inf")):
        if not job.get("nodelist") or job.get("start") is None:
            continue
        jobs += 1
        same = sim[job["label"]]["nodes"] == slurm_nodes(job["nodelist"])
        same_nodes += same
        if sim[job["label"]]["start"] == job["start"]:
            same_start += 1
            if not same:
                parted += 1
                examples.append((job["label"], round(job["start"] - t0), sorted(slurm_nodes(job["nodelist"])),
                                 sorted(sim[job["label"]]["nodes"])))
    return {"jobs": jobs, "same_nodes": same_nodes, "same_start": same_start,
            "same_start_other_nodes": parted, "examples": examples}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show", type=int, default=3, help="examples per recording (label, start s, Slurm's, the replay's)")
    args = parser.parse_args(argv)
    total = dict.fromkeys(("jobs", "same_nodes", "same_start", "same_start_other_nodes"), 0)
    print("recording                     jobs  same nodes | same start  of them other nodes  (label, s, Slurm's, replay's)")
    for path in sorted(glob.glob(str(RECORDINGS / "*.json"))):
        rec = json.loads(Path(path).read_text())
        if not any(job.get("nodelist") for job in rec["jobs"]):
            continue
        row = compare(rec)
        for key in total:
            total[key] += row[key]
        print(f"{Path(path).name:28s} {row['jobs']:5d} {row['same_nodes']:11d} | {row['same_start']:10d} "
              f"{row['same_start_other_nodes']:19d}  {row['examples'][:args.show]}")
    print(f"all: {total['jobs']} jobs, {total['same_nodes']} on Slurm's nodes; {total['same_start']} started in "
          f"Slurm's second, {total['same_start_other_nodes']} of them on other nodes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
