"""A site's limit on queued jobs means "later", not "failed"; a user's Slurm output settings never
reach asad's own calls."""

from __future__ import annotations

from asad.daemon.wiring import run_in_process
from asad.slurm.backend import SubmitDeferred, SubmitRejected
from asad.slurm.sim import make_simulator
from asad.spec.load import parse_workflow
from asad.store.repo import Store
import pytest

from tests.test_slurm_cli_parse import backend

LIMIT = (1, "", "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy "
                "(job submit limit, user's size and/or time limits)\n")


def test_submit_limit_with_jobs_queued_is_deferred_not_refused():
    b, runner, _ = backend({"sbatch": [LIMIT], "squeue": ["101\n102\n"]})
    from asad.slurm.backend import JobRequest

    with pytest.raises(SubmitDeferred):
        b.submit(JobRequest(name="x", command="true"))
    # nothing of the user's queued: waiting cannot help, it is a size or time limit
    b, runner, _ = backend({"sbatch": [LIMIT], "squeue": [""]})
    with pytest.raises(SubmitRejected):
        b.submit(JobRequest(name="x", command="true"))


def test_output_settings_of_the_user_never_reach_asads_calls(monkeypatch):
    for var, value in {"SQUEUE_FORMAT": "%i %j", "SQUEUE_FORMAT2": "jobid", "SACCT_FORMAT": "jobid",
                       "SQUEUE_STATES": "RUNNING", "SINFO_FORMAT": "%P", "SCANCEL_INTERACTIVE": "1",
                       "SQUEUE_SORT": "-t"}.items():
        monkeypatch.setenv(var, value)
    monkeypatch.setenv("SBATCH_ACCOUNT", "kept")  # input defaults a site relies on stay
    b, runner, _ = backend({"squeue": [""], "sacct": [""]})
    b.poll([5])
    env = runner.calls[0][2]
    assert not [k for k in env if k.startswith(("SQUEUE_", "SACCT_", "SINFO_", "SCANCEL_"))]
    assert env["SBATCH_ACCOUNT"] == "kept" and env["SLURM_TIME_FORMAT"] == "%s"


class LimitedSim:
    """The simulator behind a site limit: at most ``limit`` of asad's jobs queued or running."""

    def __init__(self, sim, limit: int):
        self.sim, self.limit, self.deferred = sim, limit, 0

    def __getattr__(self, name):
        return getattr(self.sim, name)

    def submit(self, req):
        live = [s for s in self.sim.find("asad:").values() if not s.state.is_final]
        if len(live) >= self.limit:
            self.deferred += 1
            raise SubmitDeferred("limit", "Job violates accounting/QOS policy (job submit limit, ...)")
        return self.sim.submit(req)


def test_a_chain_under_a_submit_limit_waits_and_completes(db_url):
    text = "name: lim\nstrategy: chain\nstages:\n" + "".join(
        f"  - {{name: s{i}, cpus: 1, time: 10m, run: 'true', simulate: {{runtime: 2m}}}}\n" for i in range(5))
    spec = parse_workflow(text)
    sim = LimitedSim(make_simulator("small", load=0.0, seed=1), limit=2)
    store = Store(db_url)
    try:
        (summary,) = run_in_process(store, sim, [spec])
    finally:
        store.close()
    assert summary["state"] == "COMPLETED", summary["message"]
    assert sim.deferred > 0
    starts = [s["start"] for s in summary["stages"]]
    assert starts == sorted(starts)
