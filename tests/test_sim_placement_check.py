"""scripts/sim_placement_check.py: the simulator's node lists against Slurm's."""

from __future__ import annotations

import json

from tests.script_module import load_script

check = load_script("sim_placement_check")


def test_slurm_s_and_the_simulator_s_node_names_read_as_the_same_numbers():
    assert check.slurm_nodes("n3") == {3}
    assert check.slurm_nodes("n[1-2]") == {1, 2}
    assert check.slurm_nodes("n[1,3-5]") == {1, 3, 4, 5}
    assert check.sim_nodes("main-0,main-2") == {1, 3}
    assert check.sim_nodes("") == set()


def test_the_fifo_dependency_recording_is_placed_on_slurm_s_nodes():
    # deps-fifo's second run: every job on the nodes Slurm gave it (a placement rule changed
    # in the simulator would move some)
    rec = json.loads((check.RECORDINGS / "deps-fifo.run2.json").read_text())
    row = check.compare(rec)
    assert row["jobs"] == 48 and row["same_nodes"] == 48 and row["same_start_other_nodes"] == 0
    # and the comparison can tell: with Slurm's node lists shifted by one node only the jobs on
    # all five nodes keep theirs
    whole = 0
    for job in (job for job in rec["jobs"] if job.get("nodelist")):
        nodes = sorted(check.slurm_nodes(job["nodelist"]))
        whole += len(nodes) == 5
        job["nodelist"] = "n[" + ",".join(str(n % 5 + 1) for n in nodes) + "]"
    assert 0 < whole < 48 and check.compare(rec)["same_nodes"] == whole
