"""Issue 38's missing expert on a real slurmctld: the daemon's probe (``sbatch --test-only``
through the CLI backend, asad/daemon/slurm_probe.py) reaches hedge's ``slurm`` expert, and nothing
is submitted by it."""

from __future__ import annotations

import math
import subprocess
import time

import pytest

from asad.core.learned import Learned
from asad.daemon.slurm_probe import SlurmProbes
from asad.learn.hedge import SLURM
from asad.slurm.backend import Dependency, DependencyType, JobRequest, JobState

from slurm_helpers import unique_tag, wait_until

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(240)]

KEY = "cluster=asad|partition=|qos=|nodes=1|cpus={c}|walltime<=1h"


def _req(name: str, cpus: int, limit_s: int = 600, **kw) -> JobRequest:
    return JobRequest(name=name, comment=f"{name}:c", command="sleep 120", cpus_per_task=cpus,
                      time_limit_s=limit_s, mem_mb=100, output="/dev/null", **kw)


def _squeue_names(cluster) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-a", "-o", "%j"], env=cluster.env(), capture_output=True, text=True,
                         timeout=30, check=True).stdout
    return out.split()


def test_the_cli_probe_reaches_hedge_and_submits_nothing(slurm, cluster):
    tag = unique_tag("probe")
    cpn = cluster.cpus_per_node
    key = KEY.format(c=cpn)
    learned = Learned(lambda kind, k: None, "hedge", predictor_params={"hedge_slurm": True})
    for i in range(5):  # a few learned waits of 10 s: the panel exists, without Slurm it says ~10 s
        learned.observe_wait(key, 10.0, at_s=1000.0 + 100 * i)
    probes = SlurmProbes(slurm, learned, interval_s=30.0, timeout_s=20.0, inline=False)
    try:
        # every node busy for up to 600 s: Slurm foresees a node-wide job's start when they end
        blockers = [slurm.submit(_req(f"{tag}-full{i}", cpn)) for i in range(cluster.nodes)]
        wait_until(slurm, blockers, lambda st: all(j in st and st[j].state is JobState.RUNNING for j in blockers))
        probe = _req(f"{tag}-probe", cpn, dependency=Dependency(DependencyType.AFTEROK, (blockers[0],)))
        learned.want_probe(key, probe)
        now = time.time()
        probes.refresh(now)
        assert probes.calls == 1 and probes.cache[key].wait_s is not None, probes.cache
        # started jobs hold their nodes to their 600-s limits: Slurm says some minutes, not 0
        assert 300.0 < probes.cache[key].wait_s <= 660.0, probes.cache[key]
        panel = learned._pool.panel(key)
        assert panel.values[SLURM] == pytest.approx(math.log10(1 + probes.cache[key].wait_s))
        assert learned.estimate_wait(key) > 10.0  # hedge weighs Slurm's answer in
        probes.refresh(now + 5)  # within the poll interval: no second sbatch --test-only
        assert probes.calls == 1
        names = _squeue_names(cluster)
        assert f"{tag}-probe" not in names and sum(n.startswith(tag) for n in names) == cluster.nodes
    finally:
        probes.close()
        if "blockers" in locals():
            slurm.cancel(blockers)
    deadline = time.time() + 60
    while any(n.startswith(tag) for n in _squeue_names(cluster)) and time.time() < deadline:
        time.sleep(1)
    assert not [n for n in _squeue_names(cluster) if n.startswith(tag)]  # squeue empty of ours after
