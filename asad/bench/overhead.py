"""``asad bench overhead``: what asad costs the cluster and the login node as the load grows.

N concurrent workflows of 10 sequential stages run on the simulator, driven exactly as the
daemon drives them (a :class:`asad.daemon.loop.Pacer` chooses each pause; the simulated cluster
advances by that pause; then one ``Runner.tick``). Per tick it measures:

- Slurm calls, through a counting proxy: status calls (``poll``, ``usage``, ``find``) must stay
  at one of each per tick whatever N is; submissions and cancellations are counted apart (one per
  job, as ``sbatch`` and ``scancel`` must be).
- engine time per wake: the time inside ``Engine.decide`` (pure decisions), apart from the
  whole tick (which adds store reads/writes and the backend calls).
- the store's size on disk and the process's peak RSS (each N runs in a fresh process).

With ``--trace`` it also prints the pauses the Pacer chose for one 3-stage workflow whose expected
ends are known: they grow by half while nothing changes and shrink to meet a planned submission or
an expected stage end. ``--huge N`` measures one workflow of N stages instead.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from asad.bench.counting import STATUS_CALLS, CountingBackend
from asad.common.arg_types import non_negative_float, positive_int
from asad.slurm.sim.presets import PRESETS

STAGES = 10
DEFAULT_NS = (1, 100, 1000)


@dataclass
class PacerStep:
    t_s: float  # virtual seconds since the start
    pause_s: float
    changed: bool
    why: str  # backoff | reset | planned | expected-end


@dataclass
class OverheadResult:
    workflows: int
    stages_per_workflow: int
    strategy: str
    preset: str
    load: float
    completed: int
    ticks: int
    virtual_h: float
    wall_s: float
    status_calls_max_per_tick: dict[str, int]
    status_calls_total: dict[str, int]
    submits: int
    cancels: int
    ids_per_poll_max: int
    decide_ms_median: float
    decide_ms_p95: float
    decide_ms_max: float
    decide_cpu_ms_median: float  # CPU time: what the engine costs, whatever else the machine runs
    decide_cpu_ms_p95: float
    decide_cpu_ms_max: float
    tick_ms_median: float
    tick_ms_p95: float
    tick_ms_max: float
    busy_tick_ms_max: float  # the first tick submits N jobs: write-ahead commits dominate it
    store_mb: float
    peak_rss_mb: float
    pacer_trace: list[PacerStep] = field(default_factory=list)


def workflow_yaml(index: int, rng: np.random.Generator, strategy: str) -> str:
    """Ten sequential stages with a mix of sizes and true run times (5-40 min, limit 1 h)."""
    lines = [f"name: wf{index}", f"strategy: {strategy}", "stages:"]
    for s in range(STAGES):
        cpus = int(rng.choice([1, 2, 4, 8]))
        runtime = int(rng.integers(300, 2400))
        lines.append(f"  - {{name: s{s}, cpus: {cpus}, mem: {cpus}G, time: 1h, run: 'true', "
                     f"simulate: {{runtime: {runtime}s, peak_mem: {cpus * 512}M}}}}")
    return "\n".join(lines) + "\n"


def _rss_peak_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


# For the Pacer trace: time limits close to the true run times, so the expected ends (start + limit
# until a run time is learned) are near the real ones and the pauses visibly tighten to meet them.
TRACE_WORKFLOW = """name: trace
strategy: asa
stages:
  - {name: first, cpus: 8, time: 22m, run: 'true', simulate: {runtime: 20m}}
  - {name: second, cpus: 8, time: 16m, run: 'true', simulate: {runtime: 15m}}
  - {name: third, cpus: 4, time: 11m, run: 'true', simulate: {runtime: 10m}}
"""


def measure(n: int, *, strategy: str = "asa", preset: str = "hpc2n", load: float = 0.5, seed: int = 1,
            db_dir: Path | None = None, trace: bool = False, max_virtual_s: float = 30 * 86400,
            workflow_text: str | None = None) -> OverheadResult:
    """Run ``n`` workflows to the end the way the daemon would; return the measures. ``workflow_text``
    replaces the generated ten-stage workflows (``n`` copies of it)."""
    from asad.daemon.wiring import make_runner
    from asad.common.config import Settings
    from asad.daemon.loop import Pacer
    from asad.slurm.sim import make_simulator
    from asad.spec.load import parse_workflow
    from asad.store.repo import Store

    rng = np.random.default_rng(seed)
    specs = [parse_workflow(workflow_text or workflow_yaml(i, rng, strategy)) for i in range(n)]
    sim = make_simulator(preset, load=load, seed=seed)
    backend = CountingBackend(sim)
    tmp = tempfile.TemporaryDirectory(dir=db_dir)
    db_path = Path(tmp.name) / "asad.db"
    settings = Settings(db_url=f"sqlite:///{db_path}", seed=seed)
    store = Store(settings.database_url)
    runner = make_runner(settings, store, backend)
    decide_s: list[float] = []
    decide_cpu_s: list[float] = []
    original = runner.engine.decide

    def timed_decide(workflows, now):  # noqa: ANN001, ANN202
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return original(workflows, now)
        finally:
            decide_s[-1] += time.perf_counter() - t0
            decide_cpu_s[-1] += time.thread_time() - c0

    runner.engine.decide = timed_decide  # type: ignore[method-assign]
    for spec in specs:
        store.add_workflow(spec, sim.now(), strategy=strategy)
    runner.load()
    backend.take()  # partitions() at start-up is not per-tick traffic
    pacer = Pacer(settings.poll_interval_s, settings.max_poll_interval_s)
    start_virtual, start_wall = sim.now(), time.perf_counter()
    per_tick_calls: list[dict[str, int]] = []
    decide_ms: list[float] = []
    decide_cpu_ms: list[float] = []
    tick_ms: list[float] = []
    trace_steps: list[PacerStep] = []
    ids_per_poll_max = 0
    while runner.active:
        decide_s.append(0.0)
        decide_cpu_s.append(0.0)
        polled_before = backend.ids_asked["poll"]
        t0 = time.perf_counter()
        report = runner.tick()
        tick_ms.append(1000 * (time.perf_counter() - t0))
        decide_ms.append(1000 * decide_s[-1])
        decide_cpu_ms.append(1000 * decide_cpu_s[-1])
        calls = backend.take()
        per_tick_calls.append(dict(calls))
        ids_per_poll_max = max(ids_per_poll_max, backend.ids_asked["poll"] - polled_before)
        now = sim.now()
        changed = bool(report.changed or report.submitted or report.cancelled)
        next_end = runner.next_expected_end()
        pause = pacer.after_tick(changed=changed, error=report.backend_error is not None, now=now,
                                 wake_at=report.wake_at, next_end=next_end)
        if trace:
            trace_steps.append(PacerStep(round(now - start_virtual, 1), round(pause, 1), changed,
                                         _why(pause, pacer.current_s, now, report.wake_at, next_end, changed)))
        if now - start_virtual > max_virtual_s:
            raise TimeoutError(f"{len(runner.active)} workflows still active after {max_virtual_s / 86400:.0f} days")
        sim.run_until(now + pause)
    wall = time.perf_counter() - start_wall
    rows = store.workflow_rows()
    completed = sum(1 for r in rows if r.state == "COMPLETED")
    store.close()
    size = sum(p.stat().st_size for p in db_path.parent.glob("asad.db*"))
    tmp.cleanup()
    status_max = {c: max((t.get(c, 0) for t in per_tick_calls), default=0) for c in STATUS_CALLS}
    return OverheadResult(
        workflows=n, stages_per_workflow=STAGES, strategy=strategy, preset=preset, load=load, completed=completed,
        ticks=len(tick_ms), virtual_h=round((sim.now() - start_virtual) / 3600, 2), wall_s=round(wall, 2),
        status_calls_max_per_tick=status_max,
        status_calls_total={c: backend.total[c] for c in STATUS_CALLS},
        submits=backend.total["submit"], cancels=backend.total["cancel"], ids_per_poll_max=ids_per_poll_max,
        decide_ms_median=round(statistics.median(decide_ms), 3), decide_ms_p95=round(_pct(decide_ms, 95), 3),
        decide_ms_max=round(max(decide_ms), 3), decide_cpu_ms_median=round(statistics.median(decide_cpu_ms), 3),
        decide_cpu_ms_p95=round(_pct(decide_cpu_ms, 95), 3), decide_cpu_ms_max=round(max(decide_cpu_ms), 3),
        tick_ms_median=round(statistics.median(tick_ms), 2),
        tick_ms_p95=round(_pct(tick_ms, 95), 2), tick_ms_max=round(max(tick_ms[1:] or tick_ms), 2),
        busy_tick_ms_max=round(tick_ms[0], 2), store_mb=round(size / 2**20, 2),
        peak_rss_mb=round(_rss_peak_mb(), 1), pacer_trace=trace_steps)


def _why(pause: float, backoff: float, now: float, wake_at: float, next_end: float, changed: bool) -> str:
    if pause >= backoff - 1e-6:
        if changed:
            return "reset"
        return "backoff"
    target = min(wake_at, next_end)
    if math.isinf(target):
        return "backoff"
    return "planned" if wake_at <= next_end else "expected-end"


# -- one huge workflow -----------------------------------------------------------------------------------
@dataclass
class HugeResult:
    stages: int
    width: int  # parallel chains; each stage runs after the one ``width`` places before it
    yaml_kb: float
    validate_s: float
    store_s: float
    first_tick_s: float
    first_tick_submitted: int
    run_s: float | None  # the whole run, per-stage on an empty simulated cluster
    ticks: int
    state: str
    store_mb: float


def huge_yaml(stages: int, width: int) -> str:
    lines = ["name: huge", "strategy: per-stage", "defaults: {time: 10m, mem: 1G}", "stages:"]
    for i in range(stages):
        after = f", after: [s{i - width}]" if i >= width else ", after: []"
        lines.append(f"  - {{name: s{i}, cpus: 1, run: 'true'{after}, simulate: {{runtime: 60s}}}}")
    return "\n".join(lines) + "\n"


def measure_huge(stages: int = 10_000, width: int = 100, run: bool = True) -> HugeResult:
    """Validate, store, plan and (``run``) run one workflow of ``stages`` stages: ``width`` parallel
    chains of one-minute stages, per-stage, on an empty simulated cluster (hpc2n: room for all)."""
    from asad.daemon.wiring import make_runner, run_to_completion
    from asad.common.config import Settings
    from asad.slurm.sim import make_simulator
    from asad.spec.load import parse_workflow
    from asad.store.repo import Store

    text = huge_yaml(stages, width)
    t0 = time.perf_counter()
    spec = parse_workflow(text, "huge.yaml")
    validate_s = time.perf_counter() - t0
    sim = make_simulator("hpc2n", load=0.0, seed=1)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "asad.db"
        store = Store(f"sqlite:///{db}")
        t0 = time.perf_counter()
        wf = store.add_workflow(spec, sim.now())
        store_s = time.perf_counter() - t0
        runner = make_runner(Settings(), store, sim)
        runner.load()
        t0 = time.perf_counter()
        report = runner.tick()
        first_tick_s = time.perf_counter() - t0
        run_s, ticks = None, 1
        if run:
            t0 = time.perf_counter()
            calls = 0
            original = runner.tick

            def counted():  # noqa: ANN202
                nonlocal calls
                calls += 1
                return original()

            runner.tick = counted  # type: ignore[method-assign]
            run_to_completion(runner, sim, [wf.id])
            run_s, ticks = time.perf_counter() - t0, calls + 1
        state = store.workflow_rows([wf.id])[0].state
        store.close()
        size = sum(p.stat().st_size for p in db.parent.glob("asad.db*"))
    return HugeResult(stages=stages, width=width, yaml_kb=round(len(text) / 1024, 1), validate_s=round(validate_s, 2),
                      store_s=round(store_s, 2), first_tick_s=round(first_tick_s, 2),
                      first_tick_submitted=report.submitted, run_s=None if run_s is None else round(run_s, 1),
                      ticks=ticks, state=state, store_mb=round(size / 2**20, 2))


def render_huge(results: list[HugeResult]) -> str:
    lines = ["| stages | chains | YAML KB | validate s | store s | first tick s (jobs submitted) | whole run s | "
             "ticks | state | store MB |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r.stages} | {r.width} | {r.yaml_kb} | {r.validate_s} | {r.store_s} | {r.first_tick_s} "
                     f"({r.first_tick_submitted}) | {'-' if r.run_s is None else r.run_s} | {r.ticks} | {r.state} | "
                     f"{r.store_mb} |")
    return "\n".join(lines)


# -- presentation -------------------------------------------------------------------------------------
def render_table(results: list[OverheadResult]) -> str:
    head = ("| workflows | stages | ticks | poll/tick max | usage/tick max | find/tick max | submits | "
            "engine CPU ms/wake median | p95 | max | engine wall ms median | p95 | tick wall ms median | p95 | "
            "first tick ms | store MB | peak RSS MB | completed | wall s |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        m = r.status_calls_max_per_tick
        lines.append(f"| {r.workflows} | {r.workflows * r.stages_per_workflow} | {r.ticks} | {m['poll']} | "
                     f"{m['usage']} | {m['find']} | {r.submits} | {r.decide_cpu_ms_median:.1f} | "
                     f"{r.decide_cpu_ms_p95:.1f} | {r.decide_cpu_ms_max:.1f} | {r.decide_ms_median:.1f} | "
                     f"{r.decide_ms_p95:.1f} | {r.tick_ms_median:.1f} | {r.tick_ms_p95:.1f} | "
                     f"{r.busy_tick_ms_max:.0f} | {r.store_mb:.2f} | {r.peak_rss_mb:.0f} | "
                     f"{r.completed}/{r.workflows} | {r.wall_s:.1f} |")
    return "\n".join(lines)


def render_trace(steps: list[PacerStep], limit: int = 40) -> str:
    lines = ["| t (virtual s) | changed | pause s | why |", "|---|---|---|---|"]
    for s in steps[:limit]:
        lines.append(f"| {s.t_s:.0f} | {'yes' if s.changed else 'no'} | {s.pause_s:.1f} | {s.why} |")
    return "\n".join(lines)


def _run_isolated(n: int, args: argparse.Namespace) -> OverheadResult:
    """Each N in a fresh interpreter, so the peak RSS is that N's alone."""
    cmd = [sys.executable, "-m", "asad", "bench", "overhead", "--workflows", str(n), "--inline", "--json",
           "--strategy", args.strategy, "--preset", args.preset, "--load", str(args.load), "--seed", str(args.seed)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
    if proc.returncode != 0:
        raise RuntimeError(f"overhead run for N={n} failed:\n{proc.stderr[-3000:]}")
    data = json.loads(proc.stdout)[0]
    data["pacer_trace"] = [PacerStep(**s) for s in data["pacer_trace"]]
    return OverheadResult(**data)


def main(args: argparse.Namespace) -> int:
    from asad.common.log import setup_logging

    setup_logging(-2)  # the runner logs every submission: thousands of lines would drown the numbers
    if args.huge:
        huge = [measure_huge(n, args.huge_width, run=not args.no_run) for n in args.huge]
        print(json.dumps([asdict(h) for h in huge], indent=2) if args.json else render_huge(huge))
        return 0 if all(h.state == "COMPLETED" or args.no_run for h in huge) else 1
    ns = args.workflows or list(DEFAULT_NS)
    results = []
    for n in ns:
        if args.inline or len(ns) == 1 and not args.isolate:
            results.append(measure(n, strategy=args.strategy, preset=args.preset, load=args.load, seed=args.seed))
        else:
            results.append(_run_isolated(n, args))
        if not args.json:
            print(f"N={n}: done in {results[-1].wall_s:.1f} s wall", file=sys.stderr)
    if args.json:
        print(json.dumps([asdict(r) for r in results], indent=2))
        return 0
    print(f"strategy {args.strategy}, simulator preset {args.preset}, load {args.load}, seed {args.seed}; "
          f"{STAGES} sequential stages per workflow; poll interval 30 s backing off to 300 s")
    print(render_table(results))
    if args.trace:
        traced = measure(1, strategy="asa", preset="small", load=0.6, seed=args.seed, trace=True,
                         workflow_text=TRACE_WORKFLOW)
        print("\nPacer pauses for one 3-stage ASA workflow (small preset, load 0.6; time limits near the run "
              "times):")
        print(render_trace(traced.pacer_trace, limit=80))
    worst = {c: max(r.status_calls_max_per_tick[c] for r in results) for c in STATUS_CALLS}
    print(f"\nstatus calls per tick, worst over all N: {worst} (target: at most 1 of each)")
    return 0 if all(v <= 1 for v in worst.values()) else 1


def register(subparsers) -> None:  # noqa: ANN001
    p = subparsers.add_parser("overhead", help="Slurm calls, engine time, store size and memory vs. workflows")
    p.add_argument("--workflows", type=positive_int, action="append", metavar="N",
                   help="concurrent workflows (repeat for several; default 1, 100 and 1000)")
    p.add_argument("--strategy", default="asa", choices=("per-stage", "chain", "asa"))
    p.add_argument("--preset", default="hpc2n", choices=sorted(PRESETS), help="simulated cluster (default hpc2n: 602 x 28 cores)")
    p.add_argument("--load", type=non_negative_float, default=0.5, help="background load of the simulated cluster")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--trace", action="store_true",
                   help="also print the Pacer's pauses, tick by tick, for one 3-stage workflow")
    p.add_argument("--huge", type=positive_int, action="append", metavar="STAGES",
                   help="instead: one workflow of this many stages (repeat for several sizes)")
    p.add_argument("--huge-width", type=positive_int, default=100, help="with --huge: parallel chains (default 100)")
    p.add_argument("--no-run", action="store_true", help="with --huge: validate, store and plan only")
    p.add_argument("--json", action="store_true")
    p.add_argument("--inline", action="store_true", help="measure in this process (no fresh process per N)")
    p.add_argument("--isolate", action="store_true", help="a fresh process even for a single N")
    p.set_defaults(func=main)
