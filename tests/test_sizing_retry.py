"""The OOM / TIMEOUT retry rule: invariants (hypothesis) and the clear failure at the cap."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asad.slurm.backend import PartitionInfo
from asad.sizing.base import Caps, Outcome, Request, SizingError
from asad.sizing.retry import is_retryable, retry_memory_mb, retry_request, retry_time_s


def oom(mem_mb: int, peak: float | None = None, state: str = "OUT_OF_MEMORY", time_s: int = 3600) -> Outcome:
    return Outcome(request=Request(cpus=2, mem_mb=mem_mb, time_s=time_s), peak_mem_mb=peak, cpu_s=10.0,
                   elapsed_s=100.0, input_bytes=None, state=state)


@settings(max_examples=300, deadline=None)
@given(failed=st.integers(1, 200_000), seen=st.one_of(st.none(), st.floats(1, 400_000)),
       cap=st.integers(1, 500_000), mode=st.sampled_from(["max-peak", "double", "smallest"]),
       default=st.one_of(st.none(), st.integers(1, 500_000)))
def test_memory_retry_invariants(failed, seen, cap, mode, default):
    if failed >= cap:
        with pytest.raises(SizingError, match=f"limit of {cap} MB"):
            retry_memory_mb(failed, float(failed), seen, cap, mode=mode, default_mem_mb=default)
        return
    new = retry_memory_mb(failed, float(failed), seen, cap, mode=mode, default_mem_mb=default)
    assert new > failed  # never less than before (and not the same either)
    assert new <= cap
    if new < cap:  # below the cap the rule is at least double or at least the largest peak seen
        assert new >= 2 * failed or (seen is not None and new >= seen)


def test_retry_goes_to_largest_peak_seen_when_above_the_failed_request():
    new = retry_request(oom(1000, 1000.0), 1500.0, Caps(8, 10_000))
    assert new == Request(cpus=2, mem_mb=1500, time_s=3600)
    # max-peak (asad's rule before issue 39's second round) goes to a largest peak far above too
    assert retry_request(oom(1000, 1000.0), 3000.0, Caps(8, 10_000), mode="max-peak").mem_mb == 3000


def test_asads_retry_takes_the_cheaper_of_double_and_the_largest_peak():
    # issue 39, second round: a largest peak seen far above the killed request (3000 MB after a kill
    # at 1000) costs a whole run at 3000 MB; double the request (2000) is tried first
    assert retry_request(oom(1000, 1000.0), 3000.0, Caps(8, 10_000)).mem_mb == 2000
    assert retry_memory_mb(1000, 1000.0, 3000.0, 10_000) == 2000


def test_the_bench_replays_the_daemons_retry_rule():
    import inspect

    from asad.bench.sizing import paper_rule
    from asad.core import engine
    from asad.sizing.retry import ASAD_RETRY_MODE

    # the engine calls retry_memory_mb without a mode: its default is the rule the bench names
    assert "retry_memory_mb(failed_mem, job.peak_rss_mb, seen, cap)" in inspect.getsource(engine)
    assert inspect.signature(retry_memory_mb).parameters["mode"].default == ASAD_RETRY_MODE == "smallest"
    assert paper_rule("sizey-like") == ASAD_RETRY_MODE


def test_retry_doubles_when_the_failed_request_was_above_every_peak_seen():
    assert retry_request(oom(1000, 1000.0), 800.0, Caps(8, 10_000)).mem_mb == 2000


def test_retry_is_capped_then_fails_clearly():
    caps = Caps(8, 1500)
    assert retry_request(oom(1000), None, caps).mem_mb == 1500
    with pytest.raises(SizingError) as err:
        retry_request(oom(1500), None, caps)
    assert "1500 MB" in str(err.value) and "cannot fit" in str(err.value)


def test_partition_info_is_accepted_as_the_limit():
    part = PartitionInfo(name="p", nodes=2, cpus_per_node=16, mem_per_node_mb=4000, max_time_s=7200)
    assert retry_request(oom(3000), None, part).mem_mb == 4000


def test_failed_with_peak_at_the_limit_counts_as_out_of_memory():
    killed = oom(1000, 990.0, state="FAILED")
    assert killed.out_of_memory and is_retryable(killed)
    plain_failure = oom(1000, 100.0, state="FAILED")
    assert not plain_failure.out_of_memory and not is_retryable(plain_failure)
    with pytest.raises(ValueError, match="would not help"):
        retry_request(plain_failure, None, Caps(8, 10_000))


@settings(max_examples=200, deadline=None)
@given(failed=st.integers(1, 200_000), over=st.floats(1.0, 10.0), seen=st.one_of(st.none(), st.floats(1, 400_000)),
       mode=st.sampled_from(["max-peak", "double", "smallest"]), default=st.one_of(st.none(), st.integers(1, 500_000)))
def test_memory_retry_is_never_below_the_killed_attempts_own_peak(failed, over, seen, mode, default):
    """Slurm may record a peak above the request of a job it killed for memory (the real cluster:
    616M peak at 200M); the retry must ask for more than that peak, whatever the history."""
    peak = failed * over
    new = retry_memory_mb(failed, peak, seen, 10**7, mode=mode, default_mem_mb=default)
    assert new >= peak
    assert retry_memory_mb(200, 616.0, None, 64_000) >= 616


@given(failed=st.integers(60, 10**6), learned=st.one_of(st.none(), st.integers(1, 10**6)),
       cap=st.one_of(st.none(), st.integers(60, 2 * 10**6)))
def test_time_retry_invariants(failed, learned, cap):
    if cap is not None and failed >= cap:
        with pytest.raises(SizingError, match="maximum time"):
            retry_time_s(failed, learned, cap)
        return
    new = retry_time_s(failed, learned, cap)
    assert new > failed
    if cap is not None:
        assert new <= cap
    if cap is None or new < cap:
        assert new >= 2 * failed


def test_timeout_retry_keeps_memory_and_lengthens_the_limit():
    out = Outcome(request=Request(4, 2000, 600), peak_mem_mb=None, cpu_s=None, elapsed_s=600.0,
                  input_bytes=None, state="TIMEOUT")
    assert retry_request(out, None, Caps(8, 4000, 86400)) == Request(4, 2000, 1200)
    assert retry_request(out, None, Caps(8, 4000, 900)).time_s == 900
