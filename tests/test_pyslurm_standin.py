"""The pyslurm backend against a stand-in module that follows pyslurm's documented API
(JobSubmitDescription(...).submit(), Jobs.load(), Job(id).cancel(), db.Jobs.load(db.JobFilter(...)),
db.Job.stats.max_resident_memory in bytes, RPCError). No real pyslurm exists for Slurm 22.05, so
this checks that asad calls that API correctly and maps its answers; it cannot check pyslurm
itself."""

from __future__ import annotations

import types

import pytest

from asad.slurm.backend import (
    Dependency,
    DependencyType,
    JobRequest,
    JobState,
    SlurmUnavailable,
    SubmitRejected,
)
from asad.slurm.pyslurm_backend import PySlurmBackend
from asad.slurm.select import make_slurm_backend, pyslurm_unusable_reason

# Field names JobSubmitDescription documents (a subset: the ones asad may set).
DOCUMENTED_SUBMIT_FIELDS = {
    "name", "account", "begin_time", "comment", "working_directory", "nodes", "dependencies",
    "memory_per_cpu", "memory_per_node", "partitions", "qos", "script", "environment", "time_limit",
    "cpus_per_task", "ntasks", "standard_output", "standard_error",
}


def make_standin(version: str = "22.5.1"):
    """A module object shaped like pyslurm, backed by a tiny in-memory controller and database."""
    mod = types.ModuleType("pyslurm")
    mod.__version__ = version
    ctl = {"next": 100, "live": {}, "db": {}, "submitted": [], "cancelled": [], "filters": [],
           "fail_next": None}

    class RPCError(Exception):
        pass

    class JobSubmitDescription:
        def __init__(self, **kwargs):
            unknown = set(kwargs) - DOCUMENTED_SUBMIT_FIELDS
            if unknown:
                raise AttributeError(f"JobSubmitDescription has no attribute(s) {sorted(unknown)}")
            self.__dict__.update(kwargs)
            self.fields = kwargs

        def submit(self):
            if ctl["fail_next"]:
                msg, ctl["fail_next"] = ctl["fail_next"], None
                raise RPCError(msg)
            jid = ctl["next"]
            ctl["next"] += 1
            ctl["submitted"].append(self.fields)
            ctl["live"][jid] = LiveJob(jid, self.fields.get("name", ""), self.fields.get("comment", ""))
            return jid

    class LiveJob:
        def __init__(self, jid, name, comment, state="PENDING"):
            self.id, self.name, self.comment, self.state = jid, name, comment, state
            self.state_reason = "Priority"
            self.partition = "main"
            self.submit_time, self.eligible_time, self.start_time, self.end_time = 1000, 1000, None, None
            self.cpus, self.num_nodes, self.allocated_nodes, self.time_limit = 4, 1, None, 60
            self.exit_code, self.exit_code_signal = 0, 0

    class Job:
        def __init__(self, job_id):
            self.id = job_id

        def cancel(self):
            if self.id not in ctl["live"]:
                raise RPCError("Invalid job id specified")
            ctl["cancelled"].append(self.id)

        @staticmethod
        def load(job_id):
            return ctl["live"][job_id]

    class Jobs(dict):
        @staticmethod
        def load(preload_passwd_info=False, frozen=False):
            if ctl["fail_next"]:
                msg, ctl["fail_next"] = ctl["fail_next"], None
                raise RPCError(msg)
            return Jobs(ctl["live"])

    class Stats:
        def __init__(self, rss_bytes, cpu_s):
            self.max_resident_memory, self.total_cpu_time = rss_bytes, cpu_s

    class DbJob:
        def __init__(self, jid, name, state, exit_code, signal, rss_bytes, memory_mb, comment=""):
            self.id, self.name, self.state, self.comment = jid, name, state, comment
            self.state_reason, self.partition = "None", "main"
            self.submit_time, self.eligible_time, self.start_time, self.end_time = 1000, 1000, 1010, 1070
            self.cpus, self.num_nodes, self.nodelist, self.time_limit = 4, 1, "n1", 60
            self.exit_code, self.exit_code_signal = exit_code, signal
            self.elapsed_time, self.memory = 60, memory_mb
            self.stats = Stats(rss_bytes, 200)

    class JobFilter:
        def __init__(self, **kwargs):
            self.__dict__.update(kwargs)
            ctl["filters"].append(kwargs)

    class DbJobs(dict):
        @staticmethod
        def load(db_filter=None, db_connection=None):
            ids = getattr(db_filter, "ids", None)
            return DbJobs({j: r for j, r in ctl["db"].items() if ids is None or j in ids})

    mod.RPCError = RPCError
    mod.JobSubmitDescription = JobSubmitDescription
    mod.Job = Job
    mod.Jobs = Jobs
    mod.db = types.SimpleNamespace(Jobs=DbJobs, JobFilter=JobFilter, Job=DbJob)
    mod._ctl = ctl
    mod._LiveJob = LiveJob
    mod._DbJob = DbJob
    return mod


class NoCLI:
    """estimate_start/partitions go through the CLI backend; here a stub that says so."""

    cluster_name = "standin"

    def estimate_start(self, req):
        return 1234.0

    def partitions(self):
        return []


def backend(mod, **kw) -> PySlurmBackend:
    return PySlurmBackend(mod, cli=NoCLI(), clock=lambda: 5000.0, user="alice", **kw)


def test_submit_uses_documented_fields():
    mod = make_standin()
    b = backend(mod)
    req = JobRequest(name="asad.1.a.1", command="echo hi", comment="asad:1:a:1", partition="main,short",
                     nodes=1, ntasks=2, cpus_per_task=3, mem_mb=2048, time_limit_s=90,
                     dependency=Dependency(DependencyType.AFTEROK, (7,)), workdir="/w", output="/w/o",
                     env={"K": "v,w"})
    assert b.submit(req) == 100
    fields = mod._ctl["submitted"][0]
    assert fields["script"] == "#!/bin/bash\necho hi\n"
    assert fields["partitions"] == "main,short" and fields["memory_per_node"] == 2048
    assert fields["time_limit"] == 2 and fields["dependencies"] == "afterok:7"
    assert fields["environment"] == {"K": "v,w"} and fields["comment"] == "asad:1:a:1"
    assert "memory_per_cpu" not in fields and b.calls["submit"] == 1


def test_submit_refusal_and_transient():
    mod = make_standin()
    b = backend(mod)
    mod._ctl["fail_next"] = "Invalid partition name specified"
    with pytest.raises(SubmitRejected, match="Invalid partition name specified"):
        b.submit(JobRequest(name="n", command="true", partition="nope"))
    mod._ctl["fail_next"] = "Socket timed out on send/recv operation"
    with pytest.raises(SlurmUnavailable):
        b.submit(JobRequest(name="n", command="true"))


def test_poll_live_and_finished_with_oom():
    mod = make_standin()
    b = backend(mod)
    a = b.submit(JobRequest(name="a", command="true", mem_mb=100))
    c = b.submit(JobRequest(name="c", command="true", mem_mb=100))
    # a finished and left slurmctld; the database says FAILED by signal 9 with 300 MB peak
    del mod._ctl["live"][a]
    mod._ctl["db"][a] = mod._DbJob(a, "a", "FAILED", 0, 9, 300 * 1024 * 1024, 100)
    out = b.poll([a, c])
    assert out[c].state is JobState.PENDING and out[c].start_time is None
    assert out[a].state is JobState.OUT_OF_MEMORY and out[a].signal == 9
    assert mod._ctl["filters"][-1]["ids"] == [a]
    assert mod._ctl["filters"][-1]["start_time"] == 5000 - 300  # its submission time, not all history
    assert dict(b.calls) == {"submit": 2, "Jobs.load": 1, "db.Jobs.load": 1}


def test_signal_9_below_request_is_not_oom():
    mod = make_standin()
    b = backend(mod)
    mod._ctl["db"][5] = mod._DbJob(5, "x", "FAILED", 0, 9, 50 * 1024 * 1024, 100)
    assert b.poll([5])[5].state is JobState.FAILED


def test_usage_converts_bytes():
    mod = make_standin()
    mod._ctl["db"][5] = mod._DbJob(5, "x", "COMPLETED", 0, 0, 512 * 1024 * 1024, 1000)
    u = backend(mod).usage([5])[5]
    assert u.peak_rss_mb == 512 and u.total_cpu_s == 200 and u.elapsed_s == 60 and u.req_mem_mb == 1000


def test_find_cancel_and_delegation():
    mod = make_standin()
    b = backend(mod)
    a = b.submit(JobRequest(name="asad.9.s.1", command="true", comment="asad:9:s:1"))
    b.submit(JobRequest(name="other", command="true"))
    mod._ctl["db"][42] = mod._DbJob(42, "asad.9.t.1", "COMPLETED", 0, 0, 1, 1, comment="asad:9:t:1")
    assert set(b.find("asad:9:")) == {a, 42}
    assert mod._ctl["filters"][-1]["users"] == ["alice"]
    b.cancel([a, 999])  # 999 is unknown: not an error
    assert mod._ctl["cancelled"] == [a]
    assert b.estimate_start(JobRequest(name="n", command="true")) == 1234.0
    assert b.cluster_name == "standin"


def test_version_matching():
    assert pyslurm_unusable_reason(make_standin("22.5.1"), (22, 5)) is None
    assert "built for Slurm 25.11" in pyslurm_unusable_reason(make_standin("25.11.0"), (22, 5))
    assert "not installed" in pyslurm_unusable_reason(None, (22, 5))
    assert "cannot tell" in pyslurm_unusable_reason(make_standin(), None)


def test_select_prefers_matching_pyslurm_else_cli(monkeypatch):
    from asad.slurm.cli import SlurmCLI

    monkeypatch.delenv("ASAD_SLURM_API", raising=False)
    chosen = make_slurm_backend(pyslurm_module=make_standin("22.5.1"), slurm_version=(22, 5), accounting=True)
    assert isinstance(chosen, PySlurmBackend)
    fallback = make_slurm_backend(pyslurm_module=make_standin("25.11.0"), slurm_version=(22, 5), accounting=True)
    assert isinstance(fallback, SlurmCLI)
    forced = make_slurm_backend(prefer="cli", pyslurm_module=make_standin("22.5.1"), slurm_version=(22, 5))
    assert isinstance(forced, SlurmCLI)
    with pytest.raises(Exception, match="cannot be used"):
        make_slurm_backend(prefer="pyslurm", pyslurm_module=make_standin("25.11.0"), slurm_version=(22, 5))
