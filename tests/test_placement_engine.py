"""A stage that lists several partitions goes to all of them (``-p a,b``) by default; with
``placement = "turnaround"`` the ReASSIGN-style agent places it and learns from outcomes."""

from __future__ import annotations

import pytest

from asad.daemon.wiring import run_in_process
from asad.common.config import ConfigError, Settings, load_settings
from asad.slurm.sim import make_simulator
from asad.spec.load import parse_workflow
from asad.store.repo import Store

WF = """
name: placed
strategy: per-stage
sizing: off
stages:
  - name: work
    partition: fast,slow
    cpus: 8
    mem: 4G
    time: 2h
    run: work
    simulate: {runtime: 30m}
"""


def test_by_default_slurm_chooses_among_the_stages_partitions(db_url):
    store = Store(db_url)
    try:
        sim = make_simulator("two-speed", load=0.0, seed=0)
        (summary,) = run_in_process(store, sim, [parse_workflow(WF)])
        (wf,) = store.load_workflows()
        rows = store.learners("placement")
    finally:
        store.close()
    assert summary["state"] == "COMPLETED"
    assert wf.jobs[0].request.partition == "fast,slow" and not rows


def test_placement_setting_is_checked(tmp_path):
    none = tmp_path / "config.toml"
    none.write_text("")  # an empty config file: the command line decides
    assert load_settings({"placement": "turnaround"}, config_file=none).placement == "turnaround"
    with pytest.raises(ConfigError, match="placement.*unknown; use one of slurm, turnaround, reassign"):
        load_settings({"placement": "fastest"}, config_file=none)


def test_a_mistyped_word_setting_is_refused_with_its_choices(monkeypatch):
    from tests.test_cli import asad

    monkeypatch.setenv("ASAD_ASA_TIMING", "begni")
    proc = asad("status", check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "'asa_timing' = 'begni' is unknown; use one of daemon, begin" in proc.stderr, proc.stderr


def test_multi_partition_stage_is_placed_and_learned(db_url):
    store = Store(db_url)
    placed = []
    try:
        for seed in range(4):
            sim = make_simulator("two-speed", load=0.0, seed=seed)
            (summary,) = run_in_process(store, sim, [parse_workflow(WF)], settings=Settings(placement="turnaround"))
            assert summary["state"] == "COMPLETED"
        for wf in store.load_workflows():
            placed.append(wf.jobs[0].request.partition)
            assert "reassign" in wf.stages["work"].size_why
        rows = store.learners("placement")
    finally:
        store.close()
    assert set(placed) <= {"fast", "slow", "fast,slow"}
    assert len(rows) == 1 and sum(len(v) for v in rows[0].state["times"].values()) == 4
