"""Fixtures for tests against a real slurmctld: the private cluster of
``slurm-scripts/local-cluster.sh`` (start it as root with ``slurm-scripts/local-cluster.sh up
--accounting``). Every test here is marked ``slurm`` and skips, saying why, when no cluster answers.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from asad.slurm.backend import JobRequest
from asad.slurm.cli import SlurmCLI

REPO = Path(__file__).resolve().parents[2]
CLUSTER_SCRIPT = REPO / "slurm-scripts" / "local-cluster.sh"
NOT_UP = ("no local Slurm cluster answers; start one as root with `slurm-scripts/local-cluster.sh up "
          "--accounting` (or export SLURM_CONF for another test cluster)")


@dataclass(frozen=True)
class Cluster:
    slurm_conf: str
    cluster_dir: str | None  # None: a cluster this script did not start (cannot be restarted)
    accounting: bool
    nodes: int
    cpus_per_node: int
    mem_per_node_mb: int

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["SLURM_CONF"] = self.slurm_conf
        if self.cluster_dir:
            env["ASAD_CLUSTER_DIR"] = self.cluster_dir
        return env

    def script(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        return subprocess.run([str(CLUSTER_SCRIPT), *args], env=self.env(), capture_output=True, text=True,
                              timeout=timeout, check=False)


def _cluster_env() -> dict[str, str]:
    """SLURM_CONF from the environment, else from ``local-cluster.sh env``."""
    if os.environ.get("SLURM_CONF"):
        return {"SLURM_CONF": os.environ["SLURM_CONF"], "ASAD_CLUSTER_DIR": os.environ.get("ASAD_CLUSTER_DIR", "")}
    res = subprocess.run([str(CLUSTER_SCRIPT), "env"], capture_output=True, text=True, timeout=30, check=False)
    out = {}
    for line in res.stdout.splitlines():
        if line.startswith("export ") and "=" in line:
            key, _, value = line[len("export "):].partition("=")
            out[key] = value
    return out


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    env = _cluster_env()
    conf = env.get("SLURM_CONF")
    if not conf or not Path(conf).exists():
        pytest.skip(NOT_UP)
    probe = SlurmCLI(slurm_conf=conf, timeout_s=15, retries=0)
    try:
        parts = probe.partitions()
        accounting = probe.accounting
    except Exception as exc:  # noqa: BLE001 - any failure means: no usable cluster
        pytest.skip(f"{NOT_UP} ({exc})")
    default = next((p for p in parts if p.default), parts[0])
    return Cluster(slurm_conf=conf, cluster_dir=env.get("ASAD_CLUSTER_DIR") or None, accounting=accounting,
                   nodes=default.nodes, cpus_per_node=default.cpus_per_node,
                   mem_per_node_mb=default.mem_per_node_mb)


@pytest.fixture
def slurm(cluster: Cluster) -> Iterator[SlurmCLI]:
    """A fresh backend per test; its jobs are cancelled at the end whatever happened."""
    backend = SlurmCLI(slurm_conf=cluster.slurm_conf, timeout_s=20, retries=3, backoff_s=0.5, backoff_max_s=2)
    submitted: list[int] = []
    real_submit = backend.submit

    def tracking_submit(req: JobRequest) -> int:
        job_id = real_submit(req)
        submitted.append(job_id)
        return job_id

    backend.submit = tracking_submit  # type: ignore[method-assign]
    yield backend
    if submitted:
        try:
            backend.cancel(submitted)
        except Exception:  # noqa: BLE001 - cleanup must not hide the test's own failure
            pass


@pytest.fixture
def accounting(cluster: Cluster) -> None:
    if not cluster.accounting:
        pytest.skip("needs accounting (sacct): start the cluster with `local-cluster.sh up --accounting`")
