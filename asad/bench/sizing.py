"""``asad bench sizing``: replay real nf-core task traces through every sizing agent.

Each workflow's COMPLETED tasks are replayed in submission order; each process (the
abstract task) gets its own agent. An attempt whose memory is below the task's true
peak is killed (OUT_OF_MEMORY) at ``ttf`` × its run time and retried by the retry rule;
its whole allocation counts as waste (Witt eq. 4). An attempt whose time limit is below
its run time ends in TIMEOUT at the limit and is retried with a longer one.

CPUs: by default (``--cpus keep``) never fewer than the trace's request, as asad does for a
stage without ``sizing_cpus: shrink``. With ``--cpus shrink`` the agents' CPU proposals stand
and run time is stretched work-conservingly: a task that kept ``u`` cores busy takes
``realtime × max(1, u/c) / max(1, u/c_trace)`` on ``c`` CPUs (see
:func:`asad.sizing.timelimit.stretched_elapsed_s`). That is an assumption, not a measurement
(the traces hold each task at one CPU count only), and it makes cutting CPUs to the average
busy cores free by construction: core·h savings under ``shrink`` are not evidence.

Rows: the traces' own requests (the users' defaults), the anchor "largest peak so far
× 1.1, first task at the request, doubling on failure", two bounds that are not agents
(:mod:`asad.bench.sizing_bounds`: the workflow-wide hindsight optimum with ≤ 3% failed
attempts, and the same paying each process's cold start), then every agent; then each
agent's share of the gap it closes between the anchor (and Witt's best agent) and the
cold-start ceiling.

Input size (``--input-feature``), only what is known when the task is submitted:

* ``upstream`` (default): the traces record no input file sizes, so the stand-in is the
  bytes written (``wchar``) by the tasks of the same sample (the trace's ``tag``) that had
  completed when the task was submitted: the outputs upstream of it, which are its
  inputs or contain them. None when no such task had completed.
* ``none``: no per-task feature at all (input-based predictors fall back to the others).
* ``rchar``: the bytes the task itself read. Known only after the task ends: it lets an
  agent see the future, so it is for comparison with earlier results only.

Retry rules (``--retry``): ``paper`` (default) replays each paper's agent with its own
rule (:func:`paper_retry`): Witt et al. (pc50, pc95, lr-*) double the failed memory;
Tovar et al. retry at the largest peak seen so far, then at the user's request, then at
the whole node; Zunker's bandit and Q-learning agent choose the retry themselves and it
must be larger than the killed attempt (else their pick doubled, else the user's value);
asad's agent uses asad's rule (:func:`asad.sizing.retry.retry_request`, ``smallest``, the daemon's). ``max-peak``, ``double`` and
``smallest`` apply asad's rule in that mode to every agent.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import heapq
import json
import math
import sys
import time
import zlib
from pathlib import Path
from typing import Callable

import numpy as np

from asad.common.arg_types import positive_int
from asad.sizing.base import Caps, Outcome, Request, SizingError
from asad.sizing.cpus import keep_user_cpus
from asad.sizing.retry import ASAD_RETRY_MODE, retry_request
from asad.bench.sizing_bounds import BOUNDS, COLD_START, HINDSIGHT, format_gaps, gap_rows, replay_hindsight
from asad.bench.sizing_trace import DEFAULT_TIME_S, Tally, TraceTask, default_request, play_attempt  # noqa: F401 (re-exported)

MB = 1024 * 1024
DEFAULT_TRACES = Path("/work/shared/data/nfcore-task-traces")
BENCH_CAPS = Caps(max_cpus=64, max_mem_mb=512 * 1024, max_time_s=7 * 86400)
MAX_ATTEMPTS = 30


def _num(v: str) -> float | None:
    return None if v in ("", "-") else float(v)


INPUT_FEATURES = ("upstream", "none", "rchar")


def _upstream_bytes(rows: list[tuple[int, int, dict]]) -> dict[int, float | None]:
    """Per task id: ``wchar`` summed over the same-tag tasks completed before its submission."""
    out: dict[int, float | None] = {}
    pending: dict[str, list[tuple[float, float]]] = {}  # tag -> heap of (complete ms, wchar)
    done: dict[str, float] = {}
    for submit, task_id, r in sorted(rows, key=lambda x: (x[0], x[1])):
        tag = r.get("tag") or ""
        if tag in ("", "-"):
            out[task_id] = None
            continue
        heap = pending.setdefault(tag, [])
        while heap and heap[0][0] <= submit:
            done[tag] = done.get(tag, 0.0) + heapq.heappop(heap)[1]
        out[task_id] = done.get(tag) or None
        complete = _num(r.get("complete", "")) or submit
        heapq.heappush(heap, (complete, _num(r.get("wchar", "")) or 0.0))
    return out


def load_trace(path: Path, input_feature: str = "upstream") -> list[TraceTask]:
    """COMPLETED rows only (the only real samples), in submission order.

    ``input_feature`` is what a task's input size is taken to be (see the module's doc);
    the upstream stand-in counts every row that completed, failed ones included.
    """
    if input_feature not in INPUT_FEATURES:
        raise ValueError(f"unknown input feature {input_feature!r} ({', '.join(INPUT_FEATURES)})")
    raw = []
    with gzip.open(path, "rt", newline="") as fh:
        for r in csv.DictReader(fh):
            raw.append((int(r["submit"]), int(r["task_id"]), {k: r.get(k, "") for k in (
                "status", "time", "process", "cpus", "memory", "peak_rss", "realtime", "%cpu", "rchar",
                "complete", "tag", "wchar", "task_id", "submit")}))
    upstream = _upstream_bytes([x for x in raw if x[2]["complete"] not in ("", "-")]) \
        if input_feature == "upstream" else {}
    rows = []
    for submit, task_id, r in raw:
        if r["status"] != "COMPLETED":
            continue
        t = _num(r["time"])
        feature = {"upstream": upstream.get(task_id), "none": None,
                   "rchar": _num(r["rchar"]) or 0.0}[input_feature]
        rows.append((submit, task_id, TraceTask(
                task_id=int(r["task_id"]), process=r["process"], cpus=int(r["cpus"]),
                mem_mb=float(r["memory"]) / MB, time_s=None if t is None else int(math.ceil(t / 1000)),
                peak_mb=float(r["peak_rss"]) / MB, realtime_s=float(r["realtime"]) / 1000.0,
                cpu_usage=(_num(r["%cpu"]) or 0.0) / 100.0, input_bytes=feature,
                submit_s=int(r["submit"]) / 1000.0,
                complete_s=(_num(r.get("complete", "")) or int(r["submit"])) / 1000.0)))
    rows.sort(key=lambda x: (x[0], x[1]))
    return [t for *_, t in rows]


def load_traces(directory: Path, input_feature: str = "upstream") -> dict[str, list[TraceTask]]:
    files = sorted(Path(directory).glob("trace_*.csv.gz"))
    if not files:
        raise FileNotFoundError(f"no trace_*.csv.gz in {directory}")
    return {f.name[len("trace_"):-len(".csv.gz")]: load_trace(f, input_feature) for f in files}


def replay_requests(tasks: list[TraceTask], ttf: float) -> Tally:
    """The traces' own requests (never killed: every trace peak is below its request)."""
    tally = Tally()
    for task in tasks:
        tally.tasks += 1
        req = default_request(task)
        req = Request(req.cpus, req.mem_mb, max(req.time_s, int(math.ceil(task.realtime_s))))
        play_attempt(tally, task, req, ttf)
    return tally


def replay_anchor(tasks: list[TraceTask], ttf: float, margin: float = 1.1, delayed: bool = False) -> Tally:
    """Largest peak so far × margin; first task of a process at its request; doubling on failure.
    ``delayed``: a task's peak is known only from the moment it completed in the trace."""
    tally = Tally()
    max_peak: dict[str, float] = {}
    waiting: list[tuple[float, int, str, float]] = []  # (complete time, order, process, peak)
    for order, task in enumerate(tasks):
        while waiting and waiting[0][0] <= task.submit_s:
            _, _, proc, peak = heapq.heappop(waiting)
            max_peak[proc] = max(max_peak.get(proc, 0.0), peak)
        tally.tasks += 1
        d = default_request(task)
        mem = d.mem_mb if task.process not in max_peak else int(math.ceil(max_peak[task.process] * margin - 1e-6))
        req = Request(d.cpus, mem, max(d.time_s, int(math.ceil(task.realtime_s))))
        for _ in range(MAX_ATTEMPTS):
            out = play_attempt(tally, task, req, ttf)
            if out.completed:
                break
            req = Request(req.cpus, req.mem_mb * 2, req.time_s)
        if delayed:
            heapq.heappush(waiting, (task.complete_s, order, task.process, task.peak_mb))
        else:
            max_peak[task.process] = max(max_peak.get(task.process, 0.0), task.peak_mb)
    return tally


WITT_AGENTS = ("pc50", "pc95", "lr-mean±", "lr-mean-", "lr-max-")
TOVAR_AGENTS = ("tovar-min-waste", "tovar-max-throughput")
ZUNKER_AGENTS = ("bandit", "qlearn")
PAPER_RULES = ("witt", "tovar", "zunker")
RETRY_MODES = ("paper", "max-peak", "double", "smallest")


def paper_rule(agent: str) -> str:
    """The retry rule of the paper an agent comes from: ``witt``, ``tovar``, ``zunker`` or asad's
    rule (``smallest``, :data:`asad.sizing.retry.ASAD_RETRY_MODE`, the daemon's)."""
    if agent in WITT_AGENTS:
        return "witt"
    if agent in TOVAR_AGENTS:
        return "tovar"
    if agent in ZUNKER_AGENTS:
        return "zunker"
    return ASAD_RETRY_MODE


def paper_retry(rule: str, failed: Outcome, n_failed: int, history_max_peak_mb: float | None,
                caps: Caps, *, learned_time_s: int | None = None, default: Request | None = None,
                agent_pick: Request | None = None) -> Request:
    """The retry after ``n_failed`` failed attempts of a task under a paper's rule.

    * ``witt`` (Witt et al. 2019, feedback-based allocation): a failed task is retried with
      double the failed memory, capped at the node.
    * ``tovar`` (Tovar et al. 2018, CCTools): the first retry is at the largest peak seen
      for the category (``a_m``), the next at the category's maximum (the user's request,
      ``default``), then the whole node.
    * ``zunker`` (Zunker 2021, §4.2.2, the memory bandit): the agent chooses the retry's
      memory (``agent_pick``, a fresh draw); "the new allocation must be greater than the
      previous one. If the bandit does pick a smaller allocation then it is ignored and the
      new allocation is either doubled or the default configuration for that task is used
      (if double the new allocation is also less than the failed allocation)". So: the
      pick if above the failed memory, else twice the pick if above it, else the user's
      memory. When even that is not above (the agents offer up to 1.5 × the user's value),
      the thesis says nothing; we double the failed memory to keep its "greater" rule.
      The thesis states this rule for the bandit only; the Q-learning agent (§4.3) is
      replayed with the same rule, its next step being its pick.
    Time-outs use asad's rule in all three (no paper gives one for the memory agents). Raises :class:`SizingError` when nothing bigger fits.
    """
    req = failed.request
    if failed.timed_out:
        return retry_request(failed, history_max_peak_mb, caps, learned_time_s=learned_time_s)
    if req.mem_mb >= caps.max_mem_mb:
        raise SizingError(f"out of memory at the node's {caps.max_mem_mb} MB")
    if rule == "witt":
        mem = 2 * req.mem_mb
    elif rule == "tovar":
        seen = float(history_max_peak_mb or 0.0)
        user = default.mem_mb if default is not None else 0
        if n_failed == 1 and seen > req.mem_mb:
            mem = int(math.ceil(seen))
        elif user > req.mem_mb:
            mem = user
        else:
            mem = caps.max_mem_mb
    elif rule == "zunker":
        pick = agent_pick.mem_mb if agent_pick is not None else 0
        user = default.mem_mb if default is not None else 0
        if pick > req.mem_mb:
            mem = pick
        elif 2 * pick > req.mem_mb:
            mem = 2 * pick
        elif user > req.mem_mb:
            mem = user
        else:
            mem = 2 * req.mem_mb
    else:
        raise ValueError(f"unknown paper retry rule {rule!r}")
    return Request(cpus=req.cpus, mem_mb=min(int(mem), caps.max_mem_mb), time_s=req.time_s)


def replay_agent(tasks: list[TraceTask], ttf: float, make: Callable[[int], object],
                 caps: Caps = BENCH_CAPS, retry_mode: str = ASAD_RETRY_MODE, seed: int = 0,
                 delayed: bool = False, cpus_mode: str = "keep") -> Tally:
    """Replay with one agent per process: ``propose`` for the first attempt, the retry rule after.

    ``delayed``: what a task's attempts measured reaches its agent only at the moment the task
    completed in the trace (nf-core submits many tasks of a process before the first ends);
    its retries still see their own kills at once.
    """
    tally = Tally()
    agents: dict[str, object] = {}
    waiting: list[tuple[float, int, str, list]] = []  # (complete time, order, process, outcomes)
    for order, task in enumerate(tasks):
        while waiting and waiting[0][0] <= task.submit_s:
            _, _, proc, outs = heapq.heappop(waiting)
            for o in outs:
                agents[proc].observe(o)
        tally.tasks += 1
        agent = agents.get(task.process)
        if agent is None:
            agent = agents[task.process] = make(seed + zlib.crc32(task.process.encode()))
        default = default_request(task)
        req = agent.propose(default, task.input_bytes).request
        req, _ = keep_user_cpus(req, default.cpus, cpus_mode)
        outs = []
        for n_try in range(MAX_ATTEMPTS):
            out = play_attempt(tally, task, req, ttf)
            if delayed:
                outs.append(out)
            else:
                agent.observe(out)
            if out.completed:
                break
            try:
                learned = agent.time.predict_s(req.cpus, task.input_bytes)
                learned_s = None if learned is None else int(learned * 1.5)
                if retry_mode in PAPER_RULES:
                    pick = None
                    if retry_mode == "zunker" and out.out_of_memory:
                        pick = agent.propose(default, task.input_bytes).request  # the agent's own retry
                    req = paper_retry(retry_mode, out, n_try + 1, agent.history.max_peak_mb(), caps,
                                      learned_time_s=learned_s, default=default, agent_pick=pick)
                    if pick is not None and (req.mem_mb, req.cpus) != (pick.mem_mb, pick.cpus):
                        agent.withdraw()  # the pick was overruled: it must not be learned from
                else:
                    req = retry_request(out, agent.history.max_peak_mb(), caps, mode=retry_mode, default=default,
                                        learned_time_s=learned_s)
            except SizingError:
                tally.unfit += 1
                break
        if outs:
            heapq.heappush(waiting, (task.complete_s, order, task.process, outs))
    return tally


def bench_agents() -> list[str]:
    from asad.sizing.registry import BENCH_AGENTS

    return list(BENCH_AGENTS)


_SHARED: dict = {}  # the traces, inherited by forked workers


def _one(job: tuple[float, str, str, str, int, dict, bool]) -> tuple[float, str, str, dict]:
    """One (ttf, policy, workflow) replay; policy is "requests", the anchor, or an agent name."""
    from asad.sizing.registry import make_agent

    ttf, name, wf, retry_mode, seed, params, delayed, cpus_mode = job
    tasks = _SHARED["traces"][wf]
    if name == "requests":
        tally = replay_requests(tasks, ttf)
    elif name == ANCHOR:
        tally = replay_anchor(tasks, ttf, delayed=delayed)
    elif name == HINDSIGHT:
        tally = replay_hindsight(tasks, ttf)
    elif name == COLD_START:
        tally = replay_hindsight(tasks, ttf, cold_start=True)
    else:
        rule = paper_rule(name) if retry_mode == "paper" else retry_mode
        if rule in PAPER_RULES:  # the papers' agents cut from their first run(s): asad's wait is not theirs
            params = {"confident_runs": 1, **params}
        tally = replay_agent(tasks, ttf, lambda s: make_agent(name, caps=BENCH_CAPS, seed=s, **params),
                             retry_mode=rule, seed=seed, delayed=delayed, cpus_mode=cpus_mode)
    return ttf, name, wf, tally.summary()


ANCHOR = "anchor-maxpeak×1.1"


def _init_shared(traces: dict) -> None:
    _SHARED["traces"] = traces


def run(traces: dict[str, list[TraceTask]], ttfs: list[float], agents: list[str],
        retry_mode: str = "paper", seed: int = 0, jobs: int = 1, params: dict | None = None,
        delayed: bool = False, cpus_mode: str = "keep") -> dict:
    """Every (ttf, policy, workflow) replay; ``jobs`` > 1 runs them in forked processes.
    ``params`` go to every agent's constructor (meant for one agent at a time)."""
    names = ["requests", ANCHOR, *BOUNDS] + [a for a in agents if a not in BOUNDS]
    params = dict(params or {})
    results: dict = {"ttf": {}, "agents": names, "workflows": list(traces), "retry_mode": retry_mode,
                     "seed": seed, "params": params, "delayed": delayed, "cpus_mode": cpus_mode}
    work = [(ttf, name, wf, retry_mode, seed, params, delayed, cpus_mode)
            for ttf in ttfs for name in names for wf in traces]
    _SHARED["traces"] = traces
    try:
        if jobs > 1:
            import multiprocessing

            # spawn, not fork: forking a process that has threads (a test runner, a daemon) can
            # deadlock the child on a lock some thread held at the fork (seen in CI).
            with multiprocessing.get_context("spawn").Pool(jobs, initializer=_init_shared,
                                                           initargs=(traces,)) as pool:
                done = pool.map(_one, work, chunksize=1)
        else:
            done = [_one(job) for job in work]
    finally:
        _SHARED.clear()
    for ttf in ttfs:
        per: dict[str, dict[str, dict]] = {n: {} for n in names}
        for t, name, wf, summary in done:
            if t == ttf:
                per[name][wf] = summary
        per = {n: {wf: per[n][wf] for wf in traces} for n in names}
        block = {"per_workflow": per, "totals": _totals(per)}
        block["gaps"] = gap_rows(block, list(traces), names[2:], ANCHOR)
        results["ttf"][str(ttf)] = block
    return results


def _totals(per: dict[str, dict[str, dict]]) -> dict[str, dict]:
    base = per["requests"]
    base_mem = sum(w["mem_alloc_gbh"] for w in base.values())
    base_cpu = sum(w["cpu_alloc_coreh"] for w in base.values())
    base_run = sum(w["run_h"] for w in base.values())
    out = {}
    for name, wfs in per.items():
        mem = sum(w["mem_alloc_gbh"] for w in wfs.values())
        cpu = sum(w["cpu_alloc_coreh"] for w in wfs.values())
        run_h = sum(w["run_h"] for w in wfs.values())
        out[name] = {
            "maq_mean": sum(w["maq"] for w in wfs.values()) / len(wfs),
            "failed_pct_mean": sum(w["failed_pct"] for w in wfs.values()) / len(wfs),
            "mem_alloc_gbh": mem, "mem_used_gbh": sum(w["mem_used_gbh"] for w in wfs.values()),
            "cpu_alloc_coreh": cpu, "cpu_used_coreh": sum(w["cpu_used_coreh"] for w in wfs.values()),
            "mem_change_pct": 100.0 * (mem / base_mem - 1.0), "cpu_change_pct": 100.0 * (cpu / base_cpu - 1.0),
            "run_change_pct": 100.0 * (run_h / base_run - 1.0),
            "unfit": sum(w["unfit"] for w in wfs.values()),
            "timeouts": sum(w["timeouts"] for w in wfs.values()),
            "limit_over_run": (sum(w["limit_h"] for w in wfs.values())
                               / max(1e-9, sum(w["ok_run_h"] for w in wfs.values()))),
            # per task, so the many short tasks count as much as the few long ones
            "limit_over_run_median": float(np.mean([w["limit_over_run_median"] or 0.0 for w in wfs.values()])),
        }
    return out


def format_text(results: dict) -> str:
    wfs = results["workflows"]
    lines = []
    for ttf, block in results["ttf"].items():
        per, tot = block["per_workflow"], block["totals"]
        lines.append(f"ttf {ttf}: MAQ % per workflow (failed attempts % of tasks)")
        head = f"{'agent':<20}" + "".join(f"{w:>15}" for w in wfs) + f"{'mean':>15}"
        head += f"{'mem GB·h':>10}{'Δmem':>7}{'core·h':>9}{'Δcpu':>7}{'Δrun':>6}{'TO':>4}{'limit/run':>10}{'median':>7}"
        lines.append(head)
        for name in results["agents"]:
            cells = "".join(f"{100 * per[name][w]['maq']:>8.1f} ({per[name][w]['failed_pct']:>4.1f})" for w in wfs)
            t = tot[name]
            lines.append(f"{name:<20}{cells}{100 * t['maq_mean']:>8.1f} ({t['failed_pct_mean']:>4.1f})"
                         f"{t['mem_alloc_gbh']:>10.0f}{t['mem_change_pct']:>6.0f}%{t['cpu_alloc_coreh']:>9.0f}"
                         f"{t['cpu_change_pct']:>6.0f}%{t['run_change_pct']:>5.0f}%{t['timeouts']:>4d}"
                         f"{t['limit_over_run']:>10.1f}{t['limit_over_run_median']:>7.1f}")
        lines.append("")
        lines.extend(format_gaps(block["gaps"], wfs))
    return "\n".join(lines)


def parse_ttfs(text: str) -> list[float]:
    vals = [float(x) for x in str(text).split(",") if x.strip()]
    if not vals or any(not 0.0 < v <= 1.0 for v in vals):
        raise argparse.ArgumentTypeError(f"--ttf wants values in (0, 1], got {text!r}")
    return vals


def main(args: argparse.Namespace) -> int:
    traces_dir = Path(args.traces)
    if not traces_dir.is_dir():
        print(f"asad bench sizing: no traces at {traces_dir} (see shared/data/README.md)", file=sys.stderr)
        return 2
    agents = args.agents.split(",") if args.agents else bench_agents()
    from asad.sizing.registry import ALIASES, agent_names

    unknown = [a for a in agents if a not in BOUNDS and ALIASES.get(a, a) not in agent_names()]
    if unknown:
        print(f"asad bench sizing: unknown agent(s) {', '.join(unknown)}; known: "
              f"{', '.join(agent_names())} (the ceilings {', '.join(BOUNDS)} are always replayed)", file=sys.stderr)
        return 2
    started = time.perf_counter()
    try:
        traces = load_traces(traces_dir, args.input_feature)
    except FileNotFoundError as exc:
        print(f"asad bench sizing: {exc} (see shared/data/README.md)", file=sys.stderr)
        return 2
    params = {}
    for item in args.param:
        key, _, value = item.partition("=")
        params[key] = int(value) if value.lstrip("-").isdigit() else float(value)
    results = run(traces, args.ttf, agents, retry_mode=args.retry, seed=args.seed, jobs=args.jobs, params=params,
                  delayed=args.delayed, cpus_mode=args.cpus)
    results["input_feature"] = args.input_feature
    results["elapsed_s"] = round(time.perf_counter() - started, 2)
    results["command"] = "asad bench sizing " + " ".join(sys.argv[3:])
    text = format_text(results) + f"replayed {sum(map(len, traces.values()))} tasks in {results['elapsed_s']} s\n"
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "sizing.json").write_text(json.dumps(results, indent=1))
        (out / "sizing.txt").write_text(text)
    print(json.dumps(results, indent=1) if args.json else text)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("sizing", help="replay nf-core task traces through the sizing agents")
    p.add_argument("--traces", default=str(DEFAULT_TRACES), help="directory of trace_*.csv.gz")
    p.add_argument("--ttf", type=parse_ttfs, default=[0.5],
                   help="time to failure of an OOM kill as a share of run time; a comma list, e.g. 0.1,0.5,0.9")
    p.add_argument("--agents", default="", help="comma list of agent names (default: all)")
    p.add_argument("--retry", default="paper", choices=list(RETRY_MODES),
                   help="OOM retry rule: each paper's own (default), or asad's rule in one mode for all agents")
    p.add_argument("--input-feature", default="upstream", choices=list(INPUT_FEATURES),
                   help="the per-task input size agents see: upstream outputs of the same sample known at "
                        "submission (default), none, or rchar (known only after the task: comparison only)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=positive_int, default=1, help="replays in parallel (forked processes)")
    p.add_argument("--param", action="append", default=[], metavar="K=V",
                   help="an agent constructor parameter, e.g. fail_penalty=3 (use with one --agents)")
    p.add_argument("--delayed", action="store_true",
                   help="a task's measurements reach its agent only when it completed in the trace")
    p.add_argument("--cpus", default="keep", choices=["keep", "shrink"],
                   help="keep: never fewer CPUs than the trace's request (asad's default, sizing_cpus: keep); "
                        "shrink: the agents' CPU proposals stand (run time stretched work-conservingly, "
                        "an assumption, not measured)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", default="", help="also write sizing.json and sizing.txt here")
    p.set_defaults(func=main)
