"""The ``asad`` command line (thin: parses, calls into the package, prints)."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from asad import __version__
from asad.common.arg_types import duration, non_negative_float, positive_float, positive_int, positive_seconds

SIM_PRIORITIES = ("fifo", "multifactor", "fairshare", "multifactor-limits")

# Each bench module exposes ``register(subparsers)``, adding its own subcommand with
# ``set_defaults(func=callable(args) -> int)``.
BENCH_MODULES = ["sim", "convergence", "predictors", "strategies", "sizing", "placement", "overhead", "faults",
                 "sim_vs_real_cli", "sim_load", "real_strategies", "sim_fairshare", "backfill_cost"]


def build_parser(*, benches: bool = True) -> argparse.ArgumentParser:
    """The whole CLI; ``benches=False`` leaves out the benches' own options (importing them loads
    the simulator and numba, most of a second, which ``asad status`` should not pay)."""
    parser = argparse.ArgumentParser(prog="asad", description="asad: the Adaptive Scheduling daemon for Slurm.")
    parser.add_argument("--version", action="version", version=f"asad {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", dest="db_url", metavar="URL", help="the store: an SQLAlchemy URL, or an SQLite file's path "
                        "(default sqlite:///$XDG_STATE_HOME/asad/asad.db)")
    common.add_argument("--config", type=Path, help="config file (default ~/.config/asad/config.toml)")
    common.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv: debug)")
    common.add_argument("-q", "--quiet", action="count", default=0, help="less log output")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("run", parents=[common], help="run a workflow in-process to completion (no daemon)")
    p.add_argument("workflow", type=Path)
    _backend_args(p)
    p.add_argument("--strategy", choices=("auto", "per-stage", "big-job", "chain", "asa"))
    p.add_argument("--mode", choices=("dependency", "naive"), help="asa mode (default: the file's, else dependency)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd("run"))

    p = sub.add_parser("submit", parents=[common], help="validate a workflow and hand it to the daemon")
    p.add_argument("workflow", type=Path)
    p.add_argument("--strategy", choices=("auto", "per-stage", "big-job", "chain", "asa"))
    p.add_argument("--mode", choices=("dependency", "naive"))
    p.add_argument("--backend", choices=("sim", "slurm"), help="the cluster to validate against (default: the "
                   "running daemon's, else the configured backend: Slurm when it answers)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the sbatch commands and scripts asad would run now; submit and store nothing")
    p.set_defaults(func=_cmd("submit"))

    p = sub.add_parser("status", parents=[common], help="stages and their jobs, like squeue")
    p.add_argument("workflow", nargs="?", type=int)
    p.add_argument("--all", action="store_true", help="finished workflows too")
    p.add_argument("-o", "--format", help=(
        "squeue-like format, e.g. '%%W %%S %%i %%t %%M %%R' ('%%.10S': a width). Fields: %%W workflow, %%S stage "
        "(squeue's %%S is the start time), %%i job id, %%A job id, %%P partition, %%j name, %%t state code, "
        "%%T state, %%M time, %%l time limit, %%L time left, %%D nodes, %%C CPUs, %%m memory per node, "
        "%%R nodes or reason, %%N nodes, %%r reason, %%p planned submission, %%e estimated wait, "
        "%%V submit time, %%a account, %%q QOS, %%k comment (asad's tag), %%X try, %%b GPUs asked "
        "(--gpus per job, or --gres per node; a column of the default format when a stage asks for GPUs)"))
    p.add_argument("--json", action="store_true")
    p.add_argument("--watch", nargs="?", const=2.0, type=positive_seconds, metavar="SECONDS", help="refresh until ^C")
    p.set_defaults(func=_cmd("status"))

    p = sub.add_parser("cancel", parents=[common], help="cancel a workflow and its Slurm jobs")
    p.add_argument("workflow", type=int)
    p.set_defaults(func=_cmd("cancel"))

    p = sub.add_parser("resume", parents=[common], help="run a failed or cancelled workflow again from its "
                       "unfinished stages (same id; completed stages are kept)")
    p.add_argument("workflow", type=int)
    p.add_argument("--run", action="store_true", help="drive it in this process until it ends, as 'asad run' "
                   "(refused while a daemon drives the store)")
    p.add_argument("--backend", choices=("sim", "slurm"), help="with --run: slurm, or sim for the simulator "
                   "(default: Slurm when it answers, else an error)")
    p.add_argument("--json", action="store_true", help="with --run: print the summary as one JSON object")
    p.set_defaults(func=_cmd("resume"))

    p = sub.add_parser("history", parents=[common], help="past workflows with their measures")
    p.add_argument("--json", action="store_true")
    p.add_argument("-n", "--limit", type=positive_int, default=50)
    p.set_defaults(func=_cmd("history"))

    p = sub.add_parser("show", parents=[common], help="a workflow's stage timeline with waits")
    p.add_argument("workflow", type=int)
    p.add_argument("--json", action="store_true")
    p.add_argument("--plot", type=Path, metavar="PNG", help="draw the stages on a time axis")
    p.set_defaults(func=_cmd("show"))

    p = sub.add_parser("daemon", parents=[common], help="run the daemon in the foreground (for systemd)")
    p.add_argument("--backend", choices=("sim", "slurm"), help="slurm, or sim for the simulator "
                   "(default: Slurm when it answers, else an error)")
    p.add_argument("--speed", type=positive_float, help="with --backend sim: virtual seconds per wall second")
    p.add_argument("--preset", help="with --backend sim: the simulated cluster")
    p.add_argument("--load", type=non_negative_float, help="with --backend sim: background load")
    p.add_argument("--poll", type=positive_seconds, dest="poll_interval_s", help="shortest poll interval (s)")
    p.set_defaults(func=_cmd("daemon"))

    p = sub.add_parser("service", parents=[common], help="write a systemd user unit that runs this asad's daemon")
    p.add_argument("--backend", choices=("sim", "slurm"), help="the daemon's backend (default: Slurm when it "
                   "answers, else an error)")
    p.add_argument("--output", type=Path, metavar="FILE", help="where to write the unit, '-' for stdout "
                   "(default ~/.config/systemd/user/asad.daemon.service)")
    p.add_argument("--force", action="store_true", help="overwrite an existing unit file")
    p.set_defaults(func=_cmd("service"))

    p = sub.add_parser("predict", parents=[common], help="the learned queue wait for a job geometry")
    p.add_argument("--cpus", type=positive_int, required=True, help="CPUs of the whole job")
    p.add_argument("--nodes", type=positive_int, default=1)
    p.add_argument("--partition", default="", help="default: the one most learned here, else the "
                   "cluster's default; a partition the cluster lacks, or a geometry no partition fits, is refused")
    p.add_argument("--qos", default=None)
    p.add_argument("--time", default="1h", type=duration, help="time limit (e.g. 30m, 2h, 1-00:00:00)")
    p.add_argument("--cluster", help="cluster name of the key (default: the configured backend's; "
                   "given, nothing is checked against a cluster)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd("predict"))

    p = sub.add_parser("learners", parents=[common], help="the wait learners by geometry")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd("learners"))

    p = sub.add_parser("explain", parents=[common], help="why each stage got its size")
    p.add_argument("workflow", type=int)
    p.add_argument("stage", nargs="?")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd("explain"))

    bench = sub.add_parser("bench", help="benchmarks that print measured numbers")
    bench_sub = bench.add_subparsers(dest="bench", required=True, metavar="BENCH")
    for name in BENCH_MODULES if benches else ():
        try:
            mod = importlib.import_module(f"asad.bench.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"asad.bench.{name}":
                raise
            continue
        mod.register(bench_sub)
    return parser


def _backend_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=("sim", "slurm"), default=None,
                   help="slurm, or sim for the simulator (default: Slurm when it answers, else an error)")
    p.add_argument("--preset", help="simulated cluster: small, hpc2n, uppmax, ... (default small)")
    p.add_argument("--load", type=non_negative_float, help="simulated background load (0 = empty cluster)")
    # asad.slurm.sim.PRIORITY_PRESETS, spelled out: the CLI starts without importing the simulator
    p.add_argument("--priority", choices=SIM_PRIORITIES, help="simulated priority policy")
    p.add_argument("--seed", type=int)


VIEW_COMMANDS = {"status", "history", "show", "predict", "learners", "explain"}  # asad/cli/commands_view.py


def _cmd(name: str):  # noqa: ANN202
    def run(args: argparse.Namespace) -> int:
        # imported when called: `asad status` should not load what `asad run` needs
        if name in VIEW_COMMANDS:
            from asad.cli import commands_view as commands
        elif name == "cancel":
            from asad.cli import cancel as commands
        else:
            from asad.cli import commands
        return getattr(commands, f"cmd_{name}")(args)
    return run


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(benches="bench" in argv).parse_args(argv)
    from asad.common.log import setup_logging

    # The daemon logs at INFO without -v: its journal says it started, stopped, and what it submitted
    # (the systemd docs promise "daemon started"); -q brings it back to warnings only.
    base = 1 if args.command == "daemon" else 0
    setup_logging(base + getattr(args, "verbose", 0) - getattr(args, "quiet", 0))
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
