"""scripts/end_path_direct.py: each job end's path read from the nodes' slurmd.logs (issue 37, ninth
session), and the replays' constants measured with it."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from asad.bench import sim_vs_real
from asad.bench.sim_vs_real import load_recordings

from tests.script_module import load_script


def _script():  # noqa: ANN202
    return load_script("end_path_direct")


# slurmd.log lines as Slurm 22.05.8 writes them at debug4 (from timeouts-oom run 4), two ends on one node:
# job 7 by the reply (its step's socket gone before the SIGTERM look), job 15 by the epilog message
LOG = """\
[2026-11-28T11:55:40.100] Launching batch job 7 for UID 0
[2026-11-28T11:55:40.110] Launching batch job 15 for UID 0
[2026-11-28T11:55:54.375] [7.batch] job 7 completed with slurm_rc = 0, job_rc = 0
[2026-11-28T11:55:54.381] debug:  _rpc_terminate_job: uid = 0 JobId=7
[2026-11-28T11:55:54.381] debug2: container signal 18 to StepId=7.batch
[2026-11-28T11:55:54.388] [7.batch] debug2:   false, shutdown
[2026-11-28T11:55:54.388] [7.batch] done with job
[2026-11-28T11:55:54.388] debug:  signal for nonexistent StepId=7.batch stepd_connect failed: No such file or directory
[2026-11-28T11:55:54.388] debug2: No steps in jobid 7 were able to be signaled with 15
[2026-11-28T11:55:54.388] debug4: sent ALREADY_COMPLETE
[2026-11-28T11:56:34.152] [15.batch] job 15 completed with slurm_rc = 0, job_rc = 0
[2026-11-28T11:56:34.154] debug:  _rpc_terminate_job: uid = 0 JobId=15
[2026-11-28T11:56:34.154] debug2: container signal 18 to StepId=15.batch
[2026-11-28T11:56:34.157] [15.batch] debug2:   false, shutdown
[2026-11-28T11:56:34.157] debug2: container signal 15 to StepId=15.batch
[2026-11-28T11:56:34.158] debug4: sent SUCCESS
[2026-11-28T11:56:34.158] debug:  JobId=15: sent epilog complete msg: rc = 0
[2026-11-28T11:56:34.159] [15.batch] done with job
"""


def test_each_end_is_labelled_by_the_lines_that_name_its_job(tmp_path: Path) -> None:
    script = _script()
    path = tmp_path / "x.slurmd-n1.log.gz"
    path.write_bytes(gzip.compress(LOG.encode()))
    ev = script.node_events(path, {"7", "15"})
    assert script.path_of(ev["7"]) == "reply"
    assert script.path_of(ev["15"]) == "epilog"
    # the race's instants: job 15's SIGTERM look (3 ms after the stepd's report) came as its
    # socket was shut (same ms), job 7's after it (0 ms apart at 1-ms resolution, found gone)
    assert ev["15"]["sigterm"] - ev["15"]["done"] == pytest.approx(0.005, abs=1e-6)
    assert ev["7"]["shutdown"] <= ev["7"]["sigterm_none"]


def test_a_log_at_debug_level_labels_by_the_epilog_message_alone() -> None:
    # at SlurmdDebug=debug no debug2/debug4 lines: a terminate request without an epilog message
    # after it was answered ALREADY_COMPLETE (_rpc_terminate_job sends the message only otherwise)
    path_of = _script().path_of
    assert path_of({"term": 1.0}) == "reply"
    assert path_of({"term": 1.0, "epilog_msg": 1.01}) == "epilog"
    assert path_of({"term": 1.0, "sigterm": 1.002}) == "?"  # debug2 seen, neither outcome: unknown
    assert path_of({}) == "?"


def _measured() -> dict:
    script = _script()
    return script.measured([r for r in load_recordings(None) if script.slurmd_logs(r)])


def test_every_time_limit_kill_takes_the_epilog_message_and_its_delay_is_the_replays() -> None:
    got = _measured()
    assert got["kills"] >= 16
    assert got["kills_by_epilog"] == got["kills"]  # _rpc_timelimit: never the reply
    assert sim_vs_real.TIMEOUT_EPILOG_S == pytest.approx(got["kill_to_epilog_s"][1], abs=0.0005)


def test_most_racing_ends_take_the_reply_when_labelled_directly() -> None:
    # the indirect label (a main pass on the freed nodes within 0.75 s = the epilog message) gave
    # 12 of 18 (k37f) and 45 of 84 (r37e); read from slurmd's own lines it is over nine in ten
    got = _measured()
    assert got["race_ends"] >= 90
    assert got["replies"] / got["race_ends"] > 0.9


def test_the_replays_race_share_and_message_delay_are_the_logs() -> None:
    # the 20-seed draws' P(reply) and the epilog message's (min, median, max) delay after
    # slurmctld's "_job_complete" are what slurmd's logs give (407 of 424; 4, 9, 33 ms), not the
    # indirect 12/18 and 0.08-0.54 s; the fixed replay takes the reply, the more likely path
    got = _measured()
    assert sim_vs_real.REPLY_SHARE == pytest.approx(got["replies"] / got["race_ends"], abs=0.0005)
    assert sim_vs_real.EPILOG_MESSAGE_DIST_S == pytest.approx(got["race_epilog_s"], abs=0.0005)
    assert sim_vs_real.REPLY_SHARE > 0.5 and sim_vs_real.FIXED_REPLY_SHARE == 1.0
