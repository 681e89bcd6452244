from __future__ import annotations

import os
from pathlib import Path

import pytest
import structlog

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SHARED = ROOT.parent / "shared"


@pytest.fixture(autouse=True)
def _own_log_config():
    """structlog's configuration is global: a test that runs asad's CLI in-process configures it
    (by default it drops info lines) and the next test in that process would inherit the filter
    (CI: the full-disk test's info line dropped after such a test, depending on test order)."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.fixture(autouse=True)
def _private_xdg(tmp_path, monkeypatch):
    """Every test gets its own state and config folders: no test touches the user's store."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    for var in ("ASAD_DB_URL", "ASAD_BACKEND", "ASAD_CONFIG", "ASAD_STATE_DIR", "ASAD_PREDICTOR"):
        monkeypatch.delenv(var, raising=False)
    # The fast suite runs on the simulator, chosen explicitly: asad's own default ("auto") drives a
    # real Slurm when one answers and refuses otherwise (tests/test_ops_user.py checks it).
    monkeypatch.setenv("ASAD_BACKEND", "sim")


@pytest.fixture
def db_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'asad.db'}"


def shared_data(*parts: str) -> Path:
    path = SHARED.joinpath("data", *parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (the read-only data folder ../shared/data beside the repo)")
    return path


os.environ.setdefault("HYPOTHESIS_PROFILE", "default")


@pytest.fixture
def limits_ctx(db_url):
    """The engine's context over a small simulated cluster with multifactor priority and
    AccountingStorageEnforce=limits: the quantile rule's site (issue 35's tests)."""
    from asad.common.config import Settings
    from asad.daemon.wiring import make_runner
    from asad.slurm.sim import make_simulator
    from asad.store.repo import Store

    store = Store(db_url)
    sim = make_simulator("small", load=0.0, seed=1, priority="multifactor", accounting_enforce_limits=True)
    runner = make_runner(Settings(), store, sim)
    yield runner.ctx
    store.close()
