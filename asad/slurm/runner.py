"""Running Slurm's commands: argument lists (never a shell), a timeout on every call, retries with
backoff on transient errors, and a count of the calls made per command.

slurmctld sites ban users who hammer the controller, so every call is counted (``calls``) and the
overhead benchmark reports Slurm calls per poll.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from asad.slurm.backend import SlurmUnavailable

# Text Slurm prints when the controller or the database is briefly unreachable. A call that fails
# with one of these is retried; anything else is the command's own answer (a refusal, a bad id).
TRANSIENT_PATTERNS: tuple[str, ...] = (
    "socket timed out",
    "unable to contact slurm controller",
    "connection refused",
    "connection reset",
    "zero bytes were transmitted or received",
    "slurm backup controller in standby mode",
    "resource temporarily unavailable",
    "transport endpoint is not connected",
    "problem talking to the database",
    "slurmdbd: unable to connect",
    "communication connection failure",
    "munge encode failed",
    "munge decode failed",
    "temporarily unable to accept job",
    "slurmctld is not responding",
    "sending persistinit msg",
)


# Environment variables of squeue, sacct, sinfo, scontrol and scancel that change their output or
# behaviour (formats, sorting, filters, prompts): never inherited by asad's own calls.
OUTPUT_ENV_PREFIXES: tuple[str, ...] = ("SQUEUE_", "SACCT_", "SINFO_", "SCONTROL_", "SCANCEL_", "SPRIO_")

# The commands that talk to slurmctld (sacct talks to slurmdbd, which may answer while slurmctld is down).
CONTROLLER_COMMANDS: tuple[str, ...] = ("sinfo", "squeue", "scontrol", "sbatch", "scancel")
# ... and of those, the ones that only read: one still running after ``probe_after_s`` is left to
# finish by itself when ``scontrol ping`` says slurmctld is down (nothing is lost by not waiting).
QUERY_COMMANDS: tuple[str, ...] = ("sinfo", "squeue", "scontrol")


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def command(self) -> str:
        return " ".join(self.argv)

    @property
    def output(self) -> str:
        """stdout and stderr together, for messages."""
        return (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).strip()


class CommandFailed(Exception):
    """A Slurm command answered with a non-zero exit that is not a transient error."""

    def __init__(self, result: CommandResult):
        super().__init__(f"{result.command} exited {result.returncode}: {result.output}")
        self.result = result


# (argv, stdin text, timeout seconds, environment) -> result; tests inject captured outputs here.
Runner = Callable[[Sequence[str], str | None, float, Mapping[str, str]], CommandResult]


def subprocess_runner(argv: Sequence[str], stdin: str | None, timeout_s: float,
                      env: Mapping[str, str]) -> CommandResult:
    proc = subprocess.run(list(argv), input=stdin, capture_output=True, text=True, timeout=timeout_s,
                          env=dict(env), check=False)
    return CommandResult(tuple(argv), proc.returncode, proc.stdout, proc.stderr)


def is_transient(text: str) -> bool:
    low = text.lower()
    return any(p in low for p in TRANSIENT_PATTERNS)


@dataclass
class RetryPolicy:
    timeout_s: float = 30.0  # per call
    retries: int = 4  # extra attempts after the first
    backoff_s: float = 1.0  # first pause; doubles each time
    backoff_max_s: float = 16.0
    # No new attempt starts after this long: a controller that is down makes each attempt take
    # ~10-20 s (the client's own connect retries), and a daemon should report the outage, not hang.
    budget_s: float = 30.0
    # A query to slurmctld that has not answered after this long, or a call that failed with a
    # transient error, makes asad ask ``scontrol ping``. Its answer is immediate when slurmctld is
    # down (its port refuses), while a query waits out the client's own connect retries first
    # (about MessageTimeout, 10 s by default, per attempt; three attempts fill the budget). Only a
    # "DOWN" stops the call there; a slow but alive slurmctld answers the ping, and the call goes on.
    # None: no probe.
    probe_after_s: float | None = 2.0
    probe_timeout_s: float = 5.0

    def pause_s(self, attempt: int) -> float:
        return min(self.backoff_max_s, self.backoff_s * (2**attempt))


class SlurmCommands:
    """Runs ``sbatch``/``squeue``/``sacct``/... with the site's environment plus ``SLURM_CONF``.

    ``SLURM_TIME_FORMAT=%s`` makes every time Slurm prints a POSIX timestamp, so no local-time
    parsing is needed (the parsers still accept ISO times from sites that override it). The
    variables that change what the client tools print or select (a user's ``SQUEUE_FORMAT`` in
    ``~/.bashrc``, ``SACCT_FORMAT``, ``SQUEUE_STATES``, ``SCANCEL_INTERACTIVE``, ...) are removed
    from asad's own calls: asad names every field and filter it parses.
    """

    def __init__(self, *, slurm_conf: str | None = None, policy: RetryPolicy | None = None,
                 runner: Runner | None = None, sleep: Callable[[float], None] = time.sleep,
                 bin_dir: str | None = None, monotonic: Callable[[], float] = time.monotonic):
        self.slurm_conf = slurm_conf
        self.monotonic = monotonic
        self.policy = policy or RetryPolicy()
        self.runner = runner or subprocess_runner
        self.sleep = sleep
        self.bin_dir = bin_dir
        self.calls: Counter[str] = Counter()

    def environment(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(OUTPUT_ENV_PREFIXES)}
        if self.slurm_conf:
            env["SLURM_CONF"] = self.slurm_conf
        env["SLURM_TIME_FORMAT"] = "%s"
        if extra:
            env.update(extra)
        return env

    def run(self, command: str, args: Sequence[str], *, stdin: str | None = None,
            extra_env: Mapping[str, str] | None = None,
            before_retry: Callable[[], object | None] | None = None, retries: int | None = None) -> CommandResult:
        """Run ``command args`` until it answers; raise :class:`CommandFailed` on a permanent
        refusal and :class:`SlurmUnavailable` when every attempt failed transiently.
        ``retries`` overrides the policy's number of extra attempts.

        ``before_retry`` runs before each retry; if it returns something other than None, that is
        returned as the answer (sbatch uses it to find a job a timed-out submission did create).
        """
        exe = os.path.join(self.bin_dir, command) if self.bin_dir else command
        argv = (exe, *args)
        env = self.environment(extra_env)
        last_error = ""
        started = self.monotonic()
        attempts = 0
        for attempt in range((self.policy.retries if retries is None else retries) + 1):
            if attempt:
                pause = self.policy.pause_s(attempt - 1)
                if self.monotonic() - started + pause > self.policy.budget_s:
                    break
                self.sleep(pause)
                if before_retry is not None:
                    found = before_retry()
                    if found is not None:
                        return found  # type: ignore[return-value]
            self.calls[command] += 1
            attempts += 1
            try:
                result = self._attempt(command, args, argv, stdin, env)
            except subprocess.TimeoutExpired:
                last_error = f"no answer within {self.policy.timeout_s:g} s"
                self._stop_if_controller_down(command, started, last_error)
                continue
            except FileNotFoundError as exc:
                raise SlurmUnavailable(f"{command} not found ({exc}); is Slurm's client installed and on PATH?") from exc
            except OSError as exc:
                last_error = str(exc)
                continue
            if result.returncode == 0:
                return result
            if is_transient(result.output):
                last_error = result.output
                self._stop_if_controller_down(command, started, last_error)
                continue
            raise CommandFailed(result)
        raise SlurmUnavailable(
            f"{command} failed {attempts} times in {self.monotonic() - started:.0f} s; last error: {last_error}")

    def _attempt(self, command: str, args: Sequence[str], argv: Sequence[str], stdin: str | None,
                 env: Mapping[str, str]) -> CommandResult:
        """One call. A query still running after ``probe_after_s`` waits on only while ``scontrol
        ping`` does not say slurmctld is down; when it does, the query is left to end by itself (its
        timeout bounds it) and :class:`SlurmUnavailable` is raised at once."""
        probe_after = self.policy.probe_after_s
        if probe_after is None or command not in QUERY_COMMANDS or list(args[:1]) == ["ping"]:
            return self.runner(argv, stdin, self.policy.timeout_s, env)
        box: dict[str, object] = {}

        def call() -> None:
            try:
                box["result"] = self.runner(argv, stdin, self.policy.timeout_s, env)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread as it is
                box["error"] = exc

        worker = threading.Thread(target=call, name=f"asad-{command}", daemon=True)
        worker.start()
        worker.join(probe_after)
        if worker.is_alive():
            down = self.controller_down()
            if down is not None:
                raise SlurmUnavailable(f"{command} had no answer after {probe_after:g} s and slurmctld does not "
                                       f"answer either (scontrol ping: {down})")
            worker.join()
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        return box["result"]  # type: ignore[return-value]

    def _stop_if_controller_down(self, command: str, started: float, error: str) -> None:
        """After a transient failure of a call to slurmctld: no more attempts when it is down."""
        if self.policy.probe_after_s is None or command not in CONTROLLER_COMMANDS:
            return
        down = self.controller_down()
        if down is not None:
            raise SlurmUnavailable(f"{command} failed in {self.monotonic() - started:.0f} s and slurmctld does not "
                                   f"answer (scontrol ping: {down}); last error: {error}")

    def controller_down(self) -> str | None:
        """What ``scontrol ping`` says when it says slurmctld is down (no controller "is UP");
        None when one answers or the ping cannot tell (no answer in ``probe_timeout_s``, no scontrol)."""
        exe = os.path.join(self.bin_dir, "scontrol") if self.bin_dir else "scontrol"
        self.calls["scontrol"] += 1
        try:
            result = self.runner((exe, "ping"), None, min(self.policy.probe_timeout_s, self.policy.timeout_s),
                                 self.environment())
        except Exception:  # noqa: BLE001 - a probe that fails says nothing either way
            return None
        lines = [line.strip() for line in result.output.splitlines() if re.search(r"\bis (UP|DOWN)\b", line)]
        if not lines or any(re.search(r"\bis UP\b", line) for line in lines):
            return None
        return "; ".join(lines)
