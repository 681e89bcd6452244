"""`asad submit` is load -> check against the site -> store -> wake, and builds no backend."""

from __future__ import annotations

import argparse

import pytest

from asad.slurm.sim import make_simulator
from asad.slurm.sim.presets import PRESETS
from asad.slurm.site import site_partitions


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_a_presets_partitions_read_without_a_simulator_equal_the_simulators(preset):
    assert site_partitions("sim", sim_preset=preset, timeout_s=1.0) == make_simulator(preset, load=0.0).partitions()


def _args(tmp_path, workflow: str, backend: str = "sim") -> argparse.Namespace:
    path = tmp_path / "wf.yaml"
    path.write_text(workflow)
    return argparse.Namespace(workflow=str(path), strategy=None, mode=None, backend=backend, dry_run=False,
                              db_url=f"sqlite:///{tmp_path / 'asad.db'}", config=None)


def test_submit_stores_and_wakes_without_building_a_backend(tmp_path, monkeypatch, capsys):
    import asad.daemon.wiring
    from asad.cli.commands import cmd_submit
    from asad.store.repo import Store

    def no_backend(*_a, **_k):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("asad submit built a backend")

    monkeypatch.setenv("ASAD_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(asad.daemon.wiring, "make_backend", no_backend)
    args = _args(tmp_path, "name: two\nstages:\n  - {name: a, cpus: 1, time: 1m, run: 'true'}\n"
                           "  - {name: b, cpus: 1, time: 1m, run: 'true', after: [a]}\n")
    assert cmd_submit(args) == 0
    assert capsys.readouterr().out.strip() == "1"
    store = Store(args.db_url)
    assert [wf.spec.name for wf in store.load_workflows([1])] == ["two"]
    store.close()
    assert (tmp_path / "state" / "wake").exists()


def test_submit_refuses_a_stage_bigger_than_the_sites_nodes_and_stores_nothing(tmp_path, monkeypatch, capsys):
    from asad.cli.commands import EXIT_INPUT, cmd_submit

    monkeypatch.setenv("ASAD_STATE_DIR", str(tmp_path / "state"))
    args = _args(tmp_path, "name: big\nstages:\n  - {name: a, cpus: 100000, time: 1m, run: 'true'}\n")
    assert cmd_submit(args) == EXIT_INPUT
    assert "Nothing was submitted" in capsys.readouterr().err
    assert not (tmp_path / "asad.db").exists() or "big" not in (tmp_path / "asad.db").read_bytes().decode("latin-1")
