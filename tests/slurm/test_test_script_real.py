"""Issue 36, item 5: ``scripts/test.sh`` never breaks the user's own cluster. Run beside a cluster
the user started (the session's), with a job of theirs queued: test.sh starts a private cluster of
its own (own folder and ports, its stale saved settings ignored), cancels nothing and stops nothing
of the user's, and stops its own cluster when it ends."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from pathlib import Path

import pytest

from asad.slurm.backend import JobRequest, JobState
from asad.slurm.cli import SlurmCLI

from slurm_helpers import unique_tag

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]


def _port_base(slurm_conf: str) -> int:
    match = re.search(r"^SlurmctldPort=(\d+)", Path(slurm_conf).read_text(), re.M)
    assert match, slurm_conf
    return int(match.group(1))


@pytest.mark.skipif(os.geteuid() != 0, reason="scripts/test.sh starts its cluster only as root")
def test_test_script_leaves_the_users_cluster_and_jobs_alone(cluster, tmp_path):
    if not cluster.cluster_dir:
        pytest.skip("the session's cluster was not started by local-cluster.sh")
    backend = SlurmCLI(slurm_conf=cluster.slurm_conf)
    tag = unique_tag("users-own")
    job_id = backend.submit(JobRequest(name="users-own", command="sleep 600", time_limit_s=900, comment=tag,
                                       mem_mb=100, workdir=str(tmp_path)))
    own_dir = tmp_path / "test-cluster"
    own_dir.mkdir()
    # settings another run saved in the test cluster's folder: test.sh must not start with them
    (own_dir / "settings").write_text("NODES=1\nCPUS=2\nMEM_MB=1000\n")
    env = {**os.environ, "SLURM_CONF": cluster.slurm_conf, "ASAD_CLUSTER_DIR": cluster.cluster_dir,
           "ASAD_TEST_CLUSTER_DIR": str(own_dir),
           "ASAD_TEST_CLUSTER_PORT_BASE": str(_port_base(cluster.slurm_conf) + 50)}
    try:
        res = subprocess.run(["bash", "scripts/test.sh", "-q", "-m", "not slurm", "-p", "no:cacheprovider",
                              "tests/test_lease.py"],
                             cwd=REPO, env=env, capture_output=True, text=True, timeout=500)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        # the user's cluster still answers and the user's job is still there (the old script
        # scancelled it and stopped this cluster on its way out)
        status = backend.poll([job_id])[job_id]
        assert status.state in (JobState.PENDING, JobState.RUNNING), status
        assert f"their own cluster in {own_dir}, not ASAD_CLUSTER_DIR={cluster.cluster_dir}" in res.stderr
        assert "4 nodes x 28 cpus" in res.stderr  # the tests' cluster, not the saved 1 x 2
        # test.sh's own cluster is down again
        assert not (own_dir / "run" / "slurmctld.pid").exists() or subprocess.run(
            ["kill", "-0", (own_dir / "run" / "slurmctld.pid").read_text().strip()],
            capture_output=True).returncode != 0
    finally:
        with contextlib.suppress(Exception):  # a cluster the old script stopped cannot cancel
            backend.cancel([job_id])
        subprocess.run([str(REPO / "slurm-scripts" / "local-cluster.sh"), "down", "--purge"], capture_output=True,
                       env={**env, "ASAD_CLUSTER_DIR": str(own_dir)}, timeout=120, check=False)
