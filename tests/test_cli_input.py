"""Bad input on the command line and in the config file: a clear message, a non-zero exit, never a
traceback (found by the real-Slurm user audit of 2026-11-26)."""

from __future__ import annotations

import os

import pytest

from asad.common.config import Settings
from asad.slurm.sim import make_simulator
from asad.spec.load import parse_workflow
from asad.store.repo import Store
from tests.conftest import EXAMPLES
from tests.test_cli import asad


def _no_traceback(proc) -> str:  # noqa: ANN001
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    return proc.stderr


def test_bad_arguments_are_usage_errors():
    for args, says in ((["predict", "--cpus", "1", "--time", "bogus"], "not a duration: 'bogus'"),
                       (["predict", "--cpus", "0"], "--cpus: must be 1 or more"),
                       (["status", "--watch", "-1"], "--watch: must be more than 0 seconds")):
        proc = asad(*args, check=False)
        assert proc.returncode == 2 and says in _no_traceback(proc), (args, proc.stderr)


def test_show_plot_to_a_format_matplotlib_cannot_write(tmp_path):
    wf_id = asad("submit", str(EXAMPLES / "blast.yaml")).stdout.strip()
    proc = asad("show", wf_id, "--plot", str(tmp_path / "g.txt"), check=False)
    assert proc.returncode == 3 and "cannot draw a '.txt' file" in _no_traceback(proc) and ".png" in proc.stderr
    assert not (tmp_path / "g.txt").exists()


def test_explain_names_an_unknown_stage_and_fails():
    wf_id = asad("submit", str(EXAMPLES / "blast.yaml")).stdout.strip()
    proc = asad("explain", wf_id, "nosuch", check=False)
    assert proc.returncode == 3 and "no stage 'nosuch'" in _no_traceback(proc) and "blastn" in proc.stderr


def test_config_file_problems_name_the_file_and_the_fix(tmp_path):
    env = os.environ.copy()
    folder = tmp_path / "config.toml"
    folder.mkdir()  # a folder where the file should be
    proc = asad("status", "--config", str(folder), check=False, env=env)
    assert proc.returncode == 3 and "cannot be read" in _no_traceback(proc) and str(folder) in proc.stderr
    proc = asad("status", "--config", str(tmp_path / "missing.toml"), check=False)
    assert proc.returncode == 3 and "does not exist" in _no_traceback(proc)
    proc = asad("status", check=False, env={**env, "ASAD_CONFIG": str(tmp_path / "missing.toml")})
    assert proc.returncode == 3 and "ASAD_CONFIG" in _no_traceback(proc)
    bad = tmp_path / "bad.toml"
    bad.write_text("poll_interval_s = -5\n")
    proc = asad("status", "--config", str(bad), check=False)
    assert proc.returncode == 3 and "'poll_interval_s' = -5.0 must be more than 0" in _no_traceback(proc)


def test_cancel_of_a_workflow_whose_stages_all_completed_records_it_completed(db_url):
    """The cancel came after the last stage ended, before a daemon looked: nothing was cancelled."""
    from asad.daemon.wiring import make_runner

    sim = make_simulator("small", load=0.0, seed=1)
    store = Store(db_url)
    runner = make_runner(Settings(), store, sim)
    wf = store.add_workflow(parse_workflow("name: one\nstages:\n  - {name: a, cpus: 1, time: 10m, run: 'true', "
                                           "simulate: {runtime: 1m}}\n"), sim.now(), strategy="per-stage")
    runner.load()
    runner.tick()
    sim.run_until(sim.now() + 600)  # a ended; nobody looked
    store.request_cancel(wf.id)
    runner.tick()
    row = store.workflow_rows([wf.id])[0]
    store.close()
    assert row.state == "COMPLETED"


def test_a_plain_path_names_an_sqlite_store(tmp_path):
    path = tmp_path / "sub" / "my.db"
    path.parent.mkdir()
    asad("submit", str(EXAMPLES / "blast.yaml"), "--db", str(path))
    assert path.exists()
    assert asad("status", "--db", f"sqlite:///{path}").stdout.count("blast") == 2
    proc = asad("history", "-n", "0", check=False)
    assert proc.returncode == 2 and "must be 1 or more" in _no_traceback(proc)


def test_predict_asks_the_engines_learner_and_borrows_for_an_unseen_geometry():
    import json

    asad("run", str(EXAMPLES / "blast.yaml"), "--load", "0")
    seen = json.loads(asad("predict", "--cpus", "1", "--time", "10m", "--json").stdout)  # blast's merge stage
    unseen = json.loads(asad("predict", "--cpus", "3", "--time", "4h", "--json").stdout)
    assert "partition=main" in seen["key"] and seen["observations"] == 1  # where the jobs ran, not ""
    assert unseen["observations"] == 0 and unseen["learned"] and unseen["borrowed_from"], unseen


def test_predict_refuses_a_geometry_this_cluster_cannot_run():
    import json

    proc = asad("predict", "--cpus", "4", "--partition", "mian", check=False)
    assert proc.returncode == 3 and "unknown partition 'mian'" in _no_traceback(proc), proc.stderr
    assert "did you mean 'main'?" in proc.stderr
    proc = asad("predict", "--cpus", "4000", check=False)  # the small preset: 28 CPUs a node
    assert proc.returncode == 3 and "4000 CPUs on one node" in _no_traceback(proc) and "28 CPUs" in proc.stderr
    assert "--nodes" not in proc.stderr  # no number of nodes holds it
    proc = asad("predict", "--cpus", "56", check=False)  # two nodes would (audit 6: the fix said nothing of --nodes)
    assert proc.returncode == 3 and "(or --nodes 2: --cpus counts the whole job's CPUs)" in proc.stderr, proc.stderr
    proc = asad("predict", "--cpus", "4", "--time", "100-00:00:00", check=False)
    assert proc.returncode == 3 and "allows at most 7-00:00:00" in _no_traceback(proc)
    fresh = json.loads(asad("predict", "--cpus", "4", "--time", "1h", "--json").stdout)
    assert "partition=main" in fresh["key"]  # nothing learned yet: the cluster's default partition


def test_learners_and_predict_tell_the_same_wait_of_a_key():
    """The audit's key had two waits, 27 s and 1 s: learners said p10 0:02 / p90 0:21 (the stored
    learner alone), predict 6.5 s / 14 s (the engine's: pooled with coarser keys, calibrated)."""
    import json

    from asad.daemon.wiring import predictor_choice
    from asad.common.config import load_settings
    from asad.core.learned import Learned

    settings = load_settings({"backend": "sim"})
    key = "cluster=sim|partition=main|qos=|nodes=1|cpus=20|walltime<=15m"
    store = Store(settings.database_url)
    kind, params = predictor_choice(settings)
    learned = Learned(store.load_learner, kind, seed=settings.seed, predictor_params=params)
    for at, wait in ((1000.0, 27.0), (2000.0, 1.0)):
        learned.observe_wait(key, wait, at_s=at)
    for row_kind, row_key, state, n in learned.drain_dirty():
        store.save_learner(row_kind, row_key, state, n, 2000.0)
    store.commit()
    store.close()
    said = json.loads(asad("predict", "--cpus", "20", "--time", "15m", "--json").stdout)
    assert said["key"] == key
    listed = {it["key"]: it for it in json.loads(asad("learners", "--json").stdout)}[key]
    assert listed["estimate_s"] == said["estimate_s"]
    assert [listed["quantiles_s"][q] for q in ("0.1", "0.5", "0.9")] == [said["quantiles"][q] for q in
                                                                         ("0.1", "0.5", "0.9")]


@pytest.mark.parametrize("args", [
    "placement --seeds -3", "placement --n 0", "overhead --workflows 0", "sim --preset nosuch", "sim --days -1",
    "predictors --cluster nowhere", "strategies --presets nosuch", "strategies --priorities fifo,bogus",
    "convergence --seeds 0", "faults --preset nosuch", "sim-load --days 0", "real-strategies --stages 0",
])
def test_bad_bench_arguments_are_usage_errors(args, capsys):
    """Found by the audit of 2026-11-26: tracebacks (numpy, KeyError, StatisticsError) or nonsense
    accepted with exit 0 (a table of nan, zeros for -1 days)."""
    from asad.cli.main import main

    with pytest.raises(SystemExit) as stopped:
        main(["bench", *args.split()])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "error: argument" in err and "Traceback" not in err, err
