"""workflow.yaml → a validated, frozen :class:`WorkflowSpec` (the objects: ``asad.spec_model``;
the check against a cluster's partitions: ``asad.spec_cluster``; both re-exported here).

Every problem is a :class:`SpecError` that names the file, the line, the field, what is wrong and how
to fix it, so that a bad file is refused before anything reaches Slurm. The format is documented in
``docs/workflow.md``; keep the two in step.

Parsing walks PyYAML's composed node tree (not the constructed Python objects) so that every key
and value keeps its line number, and so that scalars are read as the user wrote them: YAML 1.1
would otherwise turn ``time: 1:30`` into the integer 90 and ``run: true`` into a boolean.
"""

from __future__ import annotations

import difflib
import gc
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from asad.arrays import ArrayError, parse_array
from asad.spec_slurm import (
    MAIL_KEYS,
    SLURM_OPTION_KEYS,
    SlurmOptions,
    check_constraint,
    check_gres,
    check_mail,
    check_output,
    check_setup,
)
from asad.units import UnitError, format_duration, format_mem, parse_duration_s, parse_mem_mb

from asad.spec_cluster import check_against_cluster
from asad.spec_model import (
    DEFAULT_MAX_OOM_RETRIES,
    DEFAULT_MODE,
    DEFAULT_STRATEGY,
    DEFAULT_TIME_S,
    MODES,
    STRATEGIES,
    FrozenMap,
    SimulateSpec,
    SpecError,
    StageSpec,
    WorkflowSpec,
    shown_path,
    topo_indices,
)

__all__ = [
    "DEFAULT_STRATEGY", "DEFAULT_TIME_S", "MODES", "STRATEGIES", "FrozenMap", "SimulateSpec",
    "SpecError", "StageSpec", "WorkflowSpec", "check_against_cluster", "load_workflow",
    "parse_workflow",
]

NAME_MAX_LEN = 64
# Sanity bounds: far beyond any cluster, and small enough for the store's 64-bit integers.
MAX_COUNT = 10_000_000  # nodes, tasks, CPUs, retries
MAX_DURATION_S = 366 * 86400
MAX_MEM_MB = 1024**3  # a petabyte
MAX_NESTING = 1_000  # YAML collection depth (a workflow needs about 5)
MAX_NESTING_CHECK_FREE = 5_000  # below this many collection indicators no file can nest dangerously

# Names end up in Slurm job names, --comment tags, file names and squeue columns on clusters that
# often run with LANG=C, so they are plain ASCII; a leading '-' would read as an option and a
# leading '.' as a hidden file.
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SLURM_WORD_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*\Z")  # partition, account, qos
SCRIPT_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh", ".py", ".pl", ".R", ".r", ".sbatch", ".slurm")

TOP_KEYS = ("name", "strategy", "mode", "defaults", "workdir", "sizing", "idle_price", "stages")
DEFAULT_KEYS = ("partition", "account", "qos", "time", "mem", "mem_per_cpu", "cpus", "retries",
                "max_oom_retries", "env", *SLURM_OPTION_KEYS)
STAGE_KEYS = ("name", "run", "cpus", "nodes", "ntasks", "cpus_per_task", "mem", "mem_per_cpu",
              "time", "after", "env", "simulate", "retries", "max_oom_retries", "inputs", "sizing",
              "sizing_cpus", "partition", "account", "qos", "array", *SLURM_OPTION_KEYS)
SIMULATE_KEYS = ("runtime", "peak_mem", "cpu_efficiency")

# Words people reach for from sbatch, Snakemake, Nextflow or CWL, mapped to our key.
_SYNONYMS = {
    "cores": "cpus", "ncpus": "cpus", "threads": "cpus", "cpu": "cpus", "cpus-per-task": "cpus_per_task",
    "cpuspertask": "cpus_per_task", "tasks": "ntasks", "n_tasks": "ntasks", "nnodes": "nodes",
    "node": "nodes", "memory": "mem", "memory_mb": "mem", "mem-per-cpu": "mem_per_cpu",
    "walltime": "time", "time_limit": "time", "timelimit": "time", "runtime": "time",
    "depends": "after", "depends_on": "after", "dependencies": "after", "needs": "after",
    "requires": "after", "command": "run", "cmd": "run", "script": "run", "shell": "run",
    "environment": "env", "queue": "partition", "max-oom-retries": "max_oom_retries",
    "retry": "retries", "input": "inputs", "workflow": "name", "stage": "stages", "steps": "stages",
    "jobs": "stages", "tasks_list": "stages", "working_directory": "workdir", "workdir_path": "workdir",
    "chdir": "workdir", "peak_memory": "peak_mem", "mem_peak": "peak_mem", "efficiency": "cpu_efficiency",
    "duration": "runtime",
}

_TAG_NULL = "tag:yaml.org,2002:null"
_TAG_BOOL = "tag:yaml.org,2002:bool"
_TAG_INT = "tag:yaml.org,2002:int"
_TAG_FLOAT = "tag:yaml.org,2002:float"
_TAG_STR = "tag:yaml.org,2002:str"
_TAG_MERGE = "tag:yaml.org,2002:merge"

_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PLAIN_TAGS: dict[str, str] = {}  # plain scalar text → resolved tag (keys and small values repeat a lot)


class _Loader(_BASE_LOADER):  # type: ignore[misc, valid-type]
    """The safe loader with a cache in front of implicit tag resolution (regexes per scalar)."""

    def resolve(self, kind, value, implicit):  # noqa: ANN001 - PyYAML's signature
        if kind is ScalarNode and implicit[0]:
            tag = _PLAIN_TAGS.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)
                if len(_PLAIN_TAGS) < 50_000:
                    _PLAIN_TAGS[value] = tag
            return tag
        return super().resolve(kind, value, implicit)


# --------------------------------------------------------------------------------------------
# Loading


def load_workflow(path: str | Path, *, strategy: str | None = None) -> WorkflowSpec:
    """Read and validate a workflow file; ``strategy`` (e.g. from ``--strategy``) overrides the file's."""
    file = Path(path)
    shown = str(path)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise SpecError(shown, 0, "", "no such file", "check the path (it is relative to the current folder)") from None
    except IsADirectoryError:
        raise SpecError(shown, 0, "", "is a folder, not a workflow file", "name the .yaml file itself") from None
    except OSError as exc:
        raise SpecError(shown, 0, "", f"cannot read the file: {exc.strerror}", "check its permissions") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(shown, line, "", f"not UTF-8 text (byte 0x{raw[exc.start]:02x})",
                        "save the file as UTF-8") from None
    # abspath, not resolve(): a script path next to a symlinked workflow file means next to the link
    absolute = os.path.abspath(file)
    return parse_workflow(text, shown, strategy=strategy, base_dir=os.path.dirname(absolute), abs_path=absolute)


def parse_workflow(text: str, path: str = "<string>", *, strategy: str | None = None,
                   base_dir: str | Path | None = None, abs_path: str | None = None) -> WorkflowSpec:
    """Validate workflow YAML text. ``path`` is used in messages; relative script paths and
    ``workdir`` resolve against ``base_dir`` (default: the folder of ``path``, or the current folder)."""
    if base_dir is None:
        base_dir = os.path.dirname(os.path.abspath(path)) if path != "<string>" else os.getcwd()
    if abs_path is None:
        abs_path = path if path == "<string>" else os.path.abspath(path)
    # A big file is hundreds of thousands of small objects that all live until the end: the cyclic
    # garbage collector would rescan them again and again for nothing (2-3x the parse time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _Parser(path, Path(base_dir), abs_path).parse(text, strategy)
    finally:
        if collecting:
            gc.enable()


class _Parser:
    def __init__(self, shown_path: str, base_dir: Path, abs_path: str):
        self.path = shown_path
        self.base_dir = base_dir
        self.abs_path = abs_path
        self.constructor = yaml.constructor.SafeConstructor()
        self.merge_cache: dict[int, dict[str, tuple[Node, Node]]] = {}  # nodes live as long as the parse

    # ---- errors and node access ------------------------------------------------------------

    def error(self, where: Node | int | None, fld: str, problem: str, fix: str = "") -> SpecError:
        if isinstance(where, Node):
            line = where.start_mark.line + 1
        else:
            line = where or 0
        return SpecError(self.path, line, fld, problem, fix)

    def mapping(self, node: Node, fld: str, what: str, known: tuple[str, ...]) -> dict[str, tuple[Node, Node]]:
        """Keys → (key node, value node); refuses duplicate and unknown keys; applies ``<<`` merges."""
        if not isinstance(node, MappingNode):
            # "stages[2].simulate: must be ...", but "stages[2]: a stage must be ..."
            subject = f"{what} must" if fld == "" or fld.endswith("]") else "must"
            raise self.error(node, fld, f"{subject} be a mapping (key: value lines), got {_kind(node)}",
                             _mapping_fix(fld))
        merged: dict[str, tuple[Node, Node]] = {}
        out: dict[str, tuple[Node, Node]] = {}
        own: dict[str, Node] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _TAG_MERGE:
                merged.update(self._merged(value_node, fld))
                continue
            if not isinstance(key_node, ScalarNode):
                raise self.error(key_node, fld, f"a key in {what} is {_kind(key_node)}", "keys are plain words")
            key = key_node.value
            if key in own:
                raise self.error(key_node, _join(fld, key),
                                 f"duplicate key '{key}' (first at line {own[key].start_mark.line + 1})",
                                 "keep only one of them")
            own[key] = key_node
            if key not in known:
                raise self.error(key_node, fld, f"unknown key '{key}' in {what}", _suggest_key(key, known))
            out[key] = (key_node, value_node)
        for key, (key_node, _) in merged.items():
            if key not in known:
                raise self.error(key_node, fld, f"unknown key '{key}' in {what} (merged with <<)",
                                 _suggest_key(key, known))
        return {**merged, **out}  # the mapping's own keys win over merged ones

    def _merged(self, node: Node, fld: str) -> dict[str, tuple[Node, Node]]:
        """The keys a ``<<`` value brings in. Memoised per node: anchors that merge each other
        twice over would otherwise cost exponential time ("billion laughs")."""
        cached = self.merge_cache.get(id(node))
        if cached is not None:
            return cached
        sources = node.value if isinstance(node, SequenceNode) else [node]
        merged: dict[str, tuple[Node, Node]] = {}
        for source in reversed(sources):  # YAML: earlier sources win
            if not isinstance(source, MappingNode):
                raise self.error(source, fld, "'<<' must merge a mapping (an &anchor of key: value lines)",
                                 "write <<: *name where &name marks a mapping")
            inner: dict[str, tuple[Node, Node]] = {}
            own: dict[str, tuple[Node, Node]] = {}
            for key_node, value_node in source.value:
                if key_node.tag == _TAG_MERGE:
                    inner.update(self._merged(value_node, fld))
                elif isinstance(key_node, ScalarNode):
                    own[key_node.value] = (key_node, value_node)
            merged.update(inner)
            merged.update(own)  # a source's own keys win over what it merges itself
        self.merge_cache[id(node)] = merged
        return merged

    def text(self, node: Node, fld: str, what: str = "text", *, allow_empty: bool = False) -> str:
        """A scalar exactly as written (so ``true``, ``1:30`` and ``007`` stay text)."""
        if not isinstance(node, ScalarNode):
            raise self.error(node, fld, f"must be {what}, got {_kind(node)}", f"write {what} as one value")
        if _is_null(node):
            if allow_empty:
                return ""
            raise self.error(node, fld, "is empty", f"give {what}")
        return node.value

    def number(self, node: ScalarNode) -> int | float | None:
        """An int/float scalar's value, or None when it is not a finite number (``!!int abc``,
        ``.inf``, ``.nan``): explicit tags and YAML's special floats must not crash the loader."""
        try:
            value = self.constructor.construct_object(node, deep=True)
        except (ValueError, OverflowError, yaml.YAMLError):
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return value

    def idle_price(self, node: Node) -> float:
        value = self.number(node) if isinstance(node, ScalarNode) and node.tag != _TAG_BOOL else None
        if value is None or value < 0:
            shown = node.value if isinstance(node, ScalarNode) else _kind(node)
            raise self.error(node, "idle_price", f"must be a number ≥ 0, got '{shown}'",
                             "write e.g. idle_price: 0.02 (makespan seconds one idle core-second is worth; "
                             "lower submits earlier)")
        return float(value)

    def positive_int(self, node: Node, fld: str, *, allow_zero: bool = False) -> int:
        what = "a whole number ≥ 0" if allow_zero else "a positive whole number"
        if not isinstance(node, ScalarNode) or node.tag in (_TAG_NULL, _TAG_BOOL):
            got = _kind(node) if not isinstance(node, ScalarNode) else f"'{node.value}'"
            raise self.error(node, fld, f"must be {what}, got {got}", "write e.g. 4")
        raw = node.value.strip()
        number = None
        if node.tag == _TAG_INT:
            number = self.number(node)
        elif node.tag == _TAG_STR and re.fullmatch(r"[+-]?\d+", raw):
            number = int(raw)
        if not isinstance(number, int):
            raise self.error(node, fld, f"must be {what}, got '{node.value}'", "write e.g. 4 (no units)")
        if number < 0 or (number == 0 and not allow_zero):
            raise self.error(node, fld, f"must be {what}, got {number}",
                             "write 0 or more" if allow_zero else "write 1 or more")
        if number > MAX_COUNT:
            raise self.error(node, fld, f"{number} is beyond any cluster (at most {MAX_COUNT:,})",
                             "check for a typo")
        return number

    def duration(self, node: Node, fld: str) -> int:
        if not isinstance(node, ScalarNode) or node.tag in (_TAG_NULL, _TAG_BOOL):
            raise self.error(node, fld, f"must be a duration, got {_kind(node)}",
                             "write e.g. 90s, 10m, 2h, 1d or 1-02:00:00")
        raw: Any = node.value
        if node.tag in (_TAG_INT, _TAG_FLOAT) and ":" not in raw:
            raw = self.number(node)  # a bare number is minutes, as sbatch --time
        try:
            if raw is None:
                raise UnitError("not a finite number")
            seconds = parse_duration_s(raw)
        except (UnitError, OverflowError, ValueError):
            raise self.error(node, fld, f"'{node.value}' is not a duration",
                             "write e.g. 90s, 10m, 2h, 1d or 1-02:00:00 (a bare number is minutes)") from None
        if seconds <= 0:
            raise self.error(node, fld, f"must be longer than zero, got '{node.value}'", "write e.g. 10m")
        if seconds > MAX_DURATION_S:
            raise self.error(node, fld, f"'{node.value}' is longer than a year", "check the unit (a bare number is minutes)")
        return seconds

    def memory(self, node: Node, fld: str) -> int:
        if not isinstance(node, ScalarNode) or node.tag in (_TAG_NULL, _TAG_BOOL):
            raise self.error(node, fld, f"must be a memory size, got {_kind(node)}", "write e.g. 500M, 4G")
        raw: Any = node.value
        if node.tag in (_TAG_INT, _TAG_FLOAT):
            raw = self.number(node)  # a bare number is MB, as sbatch --mem
        try:
            if raw is None:
                raise UnitError("not a finite number")
            mb = parse_mem_mb(raw)
        except (UnitError, OverflowError, ValueError) as exc:
            if "positive" in str(exc):
                raise self.error(node, fld, f"must be more than zero, got '{node.value}'", "write e.g. 500M, 4G") from None
            if "at least 1 MB" in str(exc):
                raise self.error(node, fld, f"must be at least 1 MB, got '{node.value}'", "write e.g. 500M, 4G") from None
            raise self.error(node, fld, f"'{node.value}' is not a memory size",
                             "write e.g. 500M, 4G, 1.5T (a bare number is MB)") from None
        if mb <= 0:  # parse_mem_mb rounds a bare 0.4 (MB) down to 0
            raise self.error(node, fld, f"must be at least 1 MB, got '{node.value}'", "write e.g. 500M, 4G")
        if mb > MAX_MEM_MB:
            raise self.error(node, fld, f"'{node.value}' is more than a petabyte", "check the unit (a bare number is MB)")
        return mb

    def name(self, node: Node, fld: str, what: str) -> str:
        text = self.text(node, fld, f"a {what} name")
        problem = _name_problem(text)
        if problem:
            raise self.error(node, fld, f"{what} name {text!r} {problem}",
                             f"use ASCII letters, digits, '-', '_' and '.', starting with a letter or digit, "
                             f"at most {NAME_MAX_LEN} characters")
        return text

    def slurm_word(self, node: Node, fld: str, what: str, *, allow_list: bool = False) -> str:
        if allow_list and isinstance(node, SequenceNode):
            words = [self.text(item, fld, f"a {what} name") for item in node.value]
        else:
            words = self.text(node, fld, f"a {what} name").split(",")
        words = [w.strip() for w in words]
        for word in words:
            if not _SLURM_WORD_RE.match(word):
                hint = "a comma list like a,b" if allow_list else "one name"
                raise self.error(node, fld, f"{what} {word!r} is not a valid Slurm {what} name",
                                 f"write {hint} of letters, digits, '-', '_', '.'")
        return ",".join(words)

    # ---- the file ----------------------------------------------------------------------------

    def parse(self, text: str, strategy_override: str | None) -> WorkflowSpec:
        root = self.compose(text)
        top = self.mapping(root, "", "the workflow file", TOP_KEYS)

        if "name" not in top:
            raise self.error(root, "name", "missing required field 'name'", "add e.g. name: montage at the top")
        wf_name = self.name(top["name"][1], "name", "workflow")

        strategy = self.choice(top.get("strategy"), "strategy", STRATEGIES, DEFAULT_STRATEGY)
        if strategy_override is not None:
            strategy = self.choice_text(strategy_override, None, "--strategy", STRATEGIES)
        self.strategy = strategy
        mode = self.choice(top.get("mode"), "mode", MODES, DEFAULT_MODE)

        workdir = self.workdir(top.get("workdir"))
        sizing = self.sizing(top.get("sizing"), "sizing")
        idle_price = self.idle_price(top["idle_price"][1]) if "idle_price" in top else None
        defaults = self.defaults(top.get("defaults"))

        if "stages" not in top:
            raise self.error(root, "stages", "missing required field 'stages'",
                             "add a list of stages, each starting with '- name: ...' and a run: command")
        stages_node = top["stages"][1]
        if isinstance(stages_node, ScalarNode) and stages_node.tag == _TAG_NULL:
            raise self.error(stages_node, "stages", "the workflow has no stages", "add at least one stage under stages:")
        if not isinstance(stages_node, SequenceNode):
            raise self.error(stages_node, "stages", f"must be a list of stages, got {_kind(stages_node)}",
                             "start each stage with '- name: ...' under stages:")
        if not stages_node.value:
            raise self.error(stages_node, "stages", "the workflow has no stages", "add at least one stage under stages:")

        stages: list[StageSpec] = []
        after_nodes: list[Node | None] = []
        seen: dict[str, int] = {}
        for i, item in enumerate(stages_node.value):
            stage, after_node = self.stage(item, i, defaults, workdir, stages[-1].name if stages else None)
            if stage.name in seen:
                raise self.error(item, f"stages[{i}].name",
                                 f"duplicate stage name '{stage.name}' (first at line {seen[stage.name]})",
                                 "give every stage its own name")
            seen[stage.name] = stage.line
            stages.append(stage)
            after_nodes.append(after_node)
        self.check_after(stages, after_nodes)
        return WorkflowSpec(name=wf_name, strategy=strategy, stages=tuple(stages), workdir=workdir,
                            path=self.abs_path, mode=mode, sizing=sizing, idle_price=idle_price)

    def compose(self, text: str) -> Node:
        try:
            self.check_depth(text)
            root = yaml.compose(text, Loader=_Loader)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            problem = exc.problem or exc.context or "cannot be read"
            context = f", {exc.context}" if exc.context and exc.problem else ""
            opened = exc.context or ""
            if exc.context_mark and ("flow" in opened or "quoted" in opened):
                # An unclosed bracket or quote is noticed lines later; point at where it opened.
                mark = exc.context_mark
                context += " that starts here"
            line = mark.line + 1 if mark else 0
            if exc.problem_mark and "\t" in _indent_of(text, exc.problem_mark.line):
                # Say it plainly: a tab where YAML needs spaces (tabs inside block text are fine).
                raise self.error(exc.problem_mark.line + 1, "", "a tab in the indentation",
                                 "YAML indents with spaces only; replace the tab") from None
            col = f" (column {mark.column + 1})" if mark else ""
            raise self.error(line, "", f"YAML syntax error{col}: {problem}{context}",
                             _yaml_fix(f"{problem} {exc.context or ''}")) from None
        except yaml.reader.ReaderError as exc:
            line = text[: max(0, exc.position)].count("\n") + 1 if isinstance(exc.position, int) else 0
            char = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "?")
            raise self.error(line, "", f"the file contains the control character #x{char:04x}",
                             "remove it: YAML text cannot carry NUL or other control characters "
                             "(write \\0 inside double quotes if you really mean one)") from None
        except yaml.YAMLError as exc:
            raise self.error(0, "", f"YAML error: {exc}", "check the file is plain YAML text") from None
        except RecursionError:  # the pure-Python loader (no libyaml) on deep nesting
            raise self.error(0, "", "nesting too deep to read",
                             "a workflow needs a handful of levels; check for runaway brackets") from None
        if root is None:
            raise self.error(0, "", "the file is empty",
                             "a workflow needs at least name: and stages: (see docs/workflow.md)")
        return root

    def check_depth(self, text: str) -> None:
        """Refuse absurdly deep nesting before composing: libyaml's composer recurses on the C stack
        and crashes the interpreter (segfault) somewhere past 20,000 levels.

        Every collection starts with one of ``[ { - : ?``, so their count bounds the depth; only
        files with many of them (big workflows) pay for the exact check on the event stream."""
        bound = sum(text.count(c) for c in "[{-:?")
        if bound <= MAX_NESTING_CHECK_FREE:
            return
        starts = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
        ends = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
        depth = 0
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, starts):
                depth += 1
                if depth > MAX_NESTING:
                    raise self.error(event.start_mark.line + 1, "",
                                     f"nesting deeper than {MAX_NESTING} levels",
                                     "a workflow needs a handful of levels; check for runaway brackets")
            elif isinstance(event, ends):
                depth -= 1

    def choice(self, pair: tuple[Node, Node] | None, fld: str, allowed: tuple[str, ...], default: str) -> str:
        if pair is None:
            return default
        node = pair[1]
        return self.choice_text(self.text(node, fld, f"one of {', '.join(allowed)}"), node, fld, allowed)

    def choice_text(self, value: str, node: Node | None, fld: str, allowed: tuple[str, ...]) -> str:
        if value in allowed:
            return value
        normalised = value.strip().lower().replace("_", "-").replace(" ", "-")
        aliases = {"perstage": "per-stage", "bigjob": "big-job", "big": "big-job"}
        guess = normalised if normalised in allowed else aliases.get(normalised.replace("-", ""))
        close = [guess] if guess else difflib.get_close_matches(normalised, allowed, n=1, cutoff=0.5)
        hint = f"did you mean '{close[0]}'? " if close else ""
        what = fld.lstrip("-")
        raise self.error(node, fld, f"unknown {what} '{value}'", f"{hint}write one of: {', '.join(allowed)}")

    def workdir(self, pair: tuple[Node, Node] | None) -> str:
        if pair is None:
            return str(self.base_dir)
        node = pair[1]
        raw = self.text(node, "workdir", "a folder path")
        if "\x00" in raw or "\n" in raw:
            raise self.error(node, "workdir", "contains a NUL byte or a newline", "write a plain folder path")
        expanded = os.path.expandvars(os.path.expanduser(raw))
        missing = re.search(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", expanded)
        if missing:
            raise self.error(node, "workdir", f"uses ${missing.group(1)}, which is not set here",
                             f"export {missing.group(1)} before running asad, or write the folder out")
        return os.path.normpath(os.path.join(self.base_dir, expanded))

    def sizing(self, pair: tuple[Node, Node] | None, fld: str) -> str | None:
        if pair is None:
            return None
        node = pair[1]
        value = self.text(node, fld, "a sizing agent name")
        known = _sizing_agent_names()
        if known is not None and value not in known:
            close = difflib.get_close_matches(value, known, n=1, cutoff=0.5)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise self.error(node, fld, f"unknown sizing agent '{value}'", f"{hint}known agents: {', '.join(known)}")
        if known is None and not _SLURM_WORD_RE.match(value):
            raise self.error(node, fld, f"sizing agent {value!r} is not a valid name",
                             "write the agent's name, e.g. sizing: pc95 (see docs/workflow.md)")
        return value

    def sizing_cpus(self, pair: tuple[Node, Node] | None, fld: str, ntasks: int) -> str:
        """``keep`` (default: never fewer CPUs than ``cpus``) or ``shrink`` (single-task stages only)."""
        if pair is None:
            return "keep"
        node = pair[1]
        value = self.text(node, fld, "keep or shrink")
        if value not in ("keep", "shrink"):
            raise self.error(node, fld, f"must be keep or shrink, got {value!r}",
                             "write sizing_cpus: shrink to let sizing give fewer CPUs than cpus, "
                             "or leave it out to keep them (see docs/workflow.md)")
        if value == "shrink" and ntasks > 1:
            raise self.error(node, fld, f"cannot shrink the CPUs of a stage with ntasks: {ntasks}",
                             "an MPI stage needs every task's CPUs; remove sizing_cpus or set ntasks: 1")
        return value

    def defaults(self, pair: tuple[Node, Node] | None) -> dict[str, Any]:
        if pair is None:
            return {}
        node = pair[1]
        if isinstance(node, ScalarNode) and node.tag == _TAG_NULL:
            return {}
        m = self.mapping(node, "defaults", "defaults", DEFAULT_KEYS)
        out: dict[str, Any] = {}
        for key, (_, value) in m.items():
            out[key] = self.resource_value(key, value, f"defaults.{key}")
        if "mem" in out and "mem_per_cpu" in out:
            raise self.error(m["mem_per_cpu"][0], "defaults.mem_per_cpu", "mem and mem_per_cpu both given",
                             "give memory per node (mem) or per CPU (mem_per_cpu), not both")
        return out

    def resource_value(self, key: str, node: Node, fld: str) -> Any:
        """The keys shared by defaults and stages."""
        if key in ("partition",):
            return self.slurm_word(node, fld, "partition", allow_list=True)
        if key in ("account", "qos"):
            return self.slurm_word(node, fld, key)
        if key == "time":
            return self.duration(node, fld)
        if key in ("mem", "mem_per_cpu"):
            return self.memory(node, fld)
        if key in ("cpus", "nodes", "ntasks", "cpus_per_task"):
            return self.positive_int(node, fld)
        if key in ("retries", "max_oom_retries"):
            return self.positive_int(node, fld, allow_zero=True)
        if key == "env":
            return self.env(node, fld)
        if key in SLURM_OPTION_KEYS:
            return self.slurm_option(key, node, fld)
        raise AssertionError(key)

    def slurm_option(self, key: str, node: Node, fld: str) -> Any:
        """``setup``, ``output``, ``mail``, ``constraint``, ``exclusive``, ``gpus``, ``gres``."""
        if key == "setup":
            if isinstance(node, SequenceNode):
                lines = [self.text(item, fld, "a shell line") for item in node.value]
            else:
                lines = self.text(node, fld, "shell lines").splitlines()
            problem = check_setup(lines)
            if problem:
                raise self.error(node, fld, problem, "remove it")
            return tuple(line for line in lines if line.strip())
        if key == "exclusive":
            if not (isinstance(node, ScalarNode) and node.tag == _TAG_BOOL):
                raise self.error(node, fld, f"must be true or false, got {_kind(node)}",
                                 "write exclusive: true for whole nodes")
            return node.value.lower() in ("true", "yes", "on")
        if key == "gpus":
            return self.positive_int(node, fld)
        if key == "mail":
            m = self.mapping(node, fld, "mail", MAIL_KEYS)
            types = self.text(m["type"][1], f"{fld}.type", "mail types").replace(" ", "").split(",") \
                if "type" in m else ["END", "FAIL"]
            user = self.text(m["user"][1], f"{fld}.user", "a mail address") if "user" in m else None
            problem = check_mail(types, user)
            if problem:
                raise self.error(node, fld, problem, "write e.g. mail: {type: END,FAIL, user: me@example.org}")
            return (",".join(t.upper() for t in types), user)
        text = self.text(node, fld, key)
        check = {"output": check_output, "constraint": check_constraint, "gres": check_gres}[key]
        problem = check(text)
        if problem:
            hints = {"output": "write a file pattern such as logs/%x-%j.out (relative to workdir)",
                     "constraint": "write e.g. constraint: 'skylake&ib'", "gres": "write e.g. gres: gpu:2"}
            raise self.error(node, fld, problem, hints[key])
        return text

    def env(self, node: Node, fld: str) -> dict[str, str]:
        if isinstance(node, ScalarNode) and node.tag == _TAG_NULL:
            return {}
        if not isinstance(node, MappingNode):
            raise self.error(node, fld, f"must be a mapping of NAME: value, got {_kind(node)}",
                             "write e.g. env: {OMP_NUM_THREADS: 4}")
        out: dict[str, str] = {}
        merged: dict[str, tuple[Node, Node]] = {}
        pairs = []
        for key_node, value_node in node.value:
            if key_node.tag == _TAG_MERGE:  # env: {<<: *common, EXTRA: 1}
                merged.update(self._merged(value_node, fld))
            else:
                pairs.append((key_node, value_node))
        own_keys = {k.value for k, _ in pairs if isinstance(k, ScalarNode)}
        pairs = [pair for k, pair in merged.items() if k not in own_keys] + pairs
        for key_node, value_node in pairs:
            key = key_node.value if isinstance(key_node, ScalarNode) else None
            if key is None or not _ENV_NAME_RE.match(key):
                shown = key if key is not None else _kind(key_node)
                raise self.error(key_node, fld, f"{shown!r} is not a valid environment variable name",
                                 "use letters, digits and '_', not starting with a digit (e.g. MY_VAR)")
            if key in out:
                raise self.error(key_node, f"{fld}.{key}", f"duplicate variable '{key}'", "keep only one")
            if not isinstance(value_node, ScalarNode):
                raise self.error(value_node, f"{fld}.{key}", f"must be a single value, got {_kind(value_node)}",
                                 "quote it as one string, e.g. \"a b c\"")
            value = "" if _is_null(value_node) else value_node.value
            if "\x00" in value:
                raise self.error(value_node, f"{fld}.{key}", "contains a NUL byte", "remove it")
            out[key] = value
        return out

    # ---- one stage ---------------------------------------------------------------------------

    def stage(self, item: Node, i: int, defaults: dict[str, Any], workdir: str,
              previous: str | None) -> tuple[StageSpec, Node | None]:
        where = f"stages[{i}]"
        m = self.mapping(item, where, "a stage", STAGE_KEYS)
        line = item.start_mark.line + 1
        if "name" not in m:
            raise self.error(item, where, "missing required field 'name'", "add name: <stage name> to this stage")
        name = self.name(m["name"][1], f"{where}.name", "stage")
        if "run" not in m:
            raise self.error(item, where, f"stage '{name}' is missing required field 'run'",
                             "add run: <a command line or a script path>")
        run, run_is_script = self.run(m["run"][1], f"{where}.run")

        values: dict[str, Any] = {}
        for key in ("cpus", "nodes", "ntasks", "cpus_per_task", "mem", "mem_per_cpu", "time", "retries",
                    "max_oom_retries", "partition", "account", "qos", "env", *SLURM_OPTION_KEYS):
            if key in m:
                values[key] = self.resource_value(key, m[key][1], f"{where}.{key}")

        nodes, ntasks, cpus_per_task = self.geometry(m, values, defaults, where)
        mem_mb, mem_per_cpu_mb = self.stage_memory(m, values, defaults, where)

        env = dict(defaults.get("env", {}))
        env.update(values.get("env", {}))

        after_node = m["after"][1] if "after" in m else None
        if after_node is None:
            after: tuple[str, ...] = (previous,) if previous is not None else ()
        else:
            after = self.after_list(after_node, f"{where}.after")

        simulate = self.simulate(m["simulate"][1], f"{where}.simulate") if "simulate" in m else None
        inputs = self.inputs(m["inputs"][1], f"{where}.inputs", workdir) if "inputs" in m else ()
        sizing = self.sizing(m.get("sizing"), f"{where}.sizing")
        sizing_cpus = self.sizing_cpus(m.get("sizing_cpus"), f"{where}.sizing_cpus", ntasks)
        array = self.array(m["array"][1], f"{where}.array") if "array" in m else None

        stage = StageSpec(
            name=name, run=run, run_is_script=run_is_script, nodes=nodes, ntasks=ntasks,
            cpus_per_task=cpus_per_task, mem_mb=mem_mb, mem_per_cpu_mb=mem_per_cpu_mb,
            time_s=values.get("time", defaults.get("time", DEFAULT_TIME_S)),
            partition=values.get("partition", defaults.get("partition", "")),
            account=values.get("account", defaults.get("account")),
            qos=values.get("qos", defaults.get("qos")), after=after, env=FrozenMap(env),
            simulate=simulate, retries=values.get("retries", defaults.get("retries", 0)),
            max_oom_retries=values.get("max_oom_retries", defaults.get("max_oom_retries", DEFAULT_MAX_OOM_RETRIES)),
            inputs=inputs, sizing=sizing, sizing_cpus=sizing_cpus, line=line,
            slurm=self.slurm_options(values, defaults), array=array,
        )
        return stage, after_node

    def array(self, node: Node, fld: str) -> str:
        """``array: 0-99``, ``0-99%10``, ``1,5,10-20:2``, or a number of tasks: sbatch's own text back."""
        fix = "write e.g. array: 0-99 (tasks 0 to 99), array: 0-99%10 (at most 10 at once), or array: 100"
        if not isinstance(node, ScalarNode) or node.tag in (_TAG_NULL, _TAG_BOOL):
            raise self.error(node, fld, f"must be an index list or a number of tasks, got {_kind(node)}", fix)
        value: object = self.number(node) if node.tag == _TAG_INT else node.value
        try:
            spec = parse_array(value)
        except ArrayError as exc:
            raise self.error(node, fld, str(exc), fix) from None
        if getattr(self, "strategy", None) == "big-job":
            raise self.error(node, fld, "big-job runs every stage once inside one allocation, so it cannot fan a "
                             "stage out as a job array", "use another strategy (e.g. strategy: auto)")
        return spec.text()

    @staticmethod
    def slurm_options(values: dict[str, Any], defaults: dict[str, Any]) -> SlurmOptions:
        """A stage's own value of each key wins over the default's (setup lines are not merged)."""
        def pick(key: str) -> Any:
            return values.get(key, defaults.get(key))
        mail = pick("mail") or (None, None)
        return SlurmOptions(setup=pick("setup") or (), output=pick("output"), mail_type=mail[0], mail_user=mail[1],
                            constraint=pick("constraint"), exclusive=bool(pick("exclusive")), gpus=pick("gpus"),
                            gres=pick("gres"))

    def run(self, node: Node, fld: str) -> tuple[str, bool]:
        if _is_null(node):
            raise self.error(node, fld, "is empty", "write the command to run, e.g. run: ./align.sh or run: sleep 5")
        command = self.text(node, fld, "a command line or a script path")
        if "\x00" in command:
            raise self.error(node, fld, "contains a NUL byte", "remove it; a command cannot carry NUL bytes")
        if not command.strip():
            raise self.error(node, fld, "is empty", "write the command to run, e.g. run: sleep 5")
        word = command.strip()
        looks_like_script = (not any(c.isspace() for c in word)
                             and (word.endswith(SCRIPT_SUFFIXES) or word.startswith(("./", "../"))))
        if not looks_like_script:
            return command, False
        script = Path(os.path.expanduser(word))
        if not script.is_absolute():
            script = self.base_dir / script
        script = Path(os.path.normpath(script))
        if not script.is_file():
            raise self.error(node, fld, f"script not found: {shown_path(str(script))}",
                             "a one-word run ending in .sh (or starting ./) is a script path relative to the "
                             "workflow file; fix the path, or write a command line")
        return str(script), True

    def geometry(self, m: dict, values: dict[str, Any], defaults: dict[str, Any], where: str) -> tuple[int, int, int]:
        if "cpus" in values:
            for other in ("ntasks", "cpus_per_task"):
                if other in values:
                    raise self.error(m[other][0], f"{where}.{other}", f"cpus and {other} both given",
                                     "cpus: N means one task with N CPUs on one node; write either cpus, or "
                                     "nodes + ntasks (+ cpus_per_task)")
            if values.get("nodes", 1) > 1:
                raise self.error(m["nodes"][0], f"{where}.nodes", f"cpus with nodes: {values['nodes']}",
                                 "cpus: N is one node; for several nodes write nodes + ntasks (+ cpus_per_task)")
            return 1, 1, values["cpus"]
        if any(k in values for k in ("nodes", "ntasks", "cpus_per_task")):
            nodes = values.get("nodes", 1)
            ntasks = values.get("ntasks", nodes)  # Slurm's default: one task per node
            if ntasks < nodes:
                raise self.error(m["ntasks"][0], f"{where}.ntasks", f"ntasks ({ntasks}) is fewer than nodes ({nodes})",
                                 f"every node needs at least one task: set ntasks: {nodes} or more, or nodes: {ntasks}")
            return nodes, ntasks, values.get("cpus_per_task", 1)
        return 1, 1, defaults.get("cpus", 1)

    def stage_memory(self, m: dict, values: dict[str, Any], defaults: dict[str, Any],
                     where: str) -> tuple[int | None, int | None]:
        if "mem" in values and "mem_per_cpu" in values:
            raise self.error(m["mem_per_cpu"][0], f"{where}.mem_per_cpu", "mem and mem_per_cpu both given",
                             "give memory per node (mem) or per CPU (mem_per_cpu), not both")
        if "mem" in values or "mem_per_cpu" in values:  # the stage's choice replaces the default's
            return values.get("mem"), values.get("mem_per_cpu")
        return defaults.get("mem"), defaults.get("mem_per_cpu")

    def after_list(self, node: Node, fld: str) -> tuple[str, ...]:
        if isinstance(node, ScalarNode):
            if _is_null(node):
                raise self.error(node, fld, "is empty",
                                 "write after: [] for a stage that depends on nothing, or name stages")
            names = [node.value]
            items = [node]
        elif isinstance(node, SequenceNode):
            items = node.value
            names = [self.text(item, fld, "a stage name") for item in items]
        else:
            raise self.error(node, fld, f"must be a stage name or a list of them, got {_kind(node)}",
                             "write after: prepare or after: [align_a, align_b]")
        return tuple(dict.fromkeys(n.strip() for n in names))  # repeats are harmless: drop them

    def simulate(self, node: Node, fld: str) -> SimulateSpec:
        m = self.mapping(node, fld, "simulate", SIMULATE_KEYS)
        if "runtime" not in m:
            raise self.error(node, fld, "missing required field 'runtime'",
                             "add the stage's true run time, e.g. simulate: {runtime: 10m}")
        runtime = self.duration(m["runtime"][1], f"{fld}.runtime")
        peak = self.memory(m["peak_mem"][1], f"{fld}.peak_mem") if "peak_mem" in m else None
        efficiency = 1.0
        if "cpu_efficiency" in m:
            eff_node = m["cpu_efficiency"][1]
            value = self.number(eff_node) if isinstance(eff_node, ScalarNode) else None
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
                shown = eff_node.value if isinstance(eff_node, ScalarNode) else _kind(eff_node)
                raise self.error(eff_node, f"{fld}.cpu_efficiency", f"must be a number in (0, 1], got '{shown}'",
                                 "write e.g. cpu_efficiency: 0.9 (the fraction of allocated CPU time used)")
            efficiency = float(value)
        return SimulateSpec(runtime_s=float(runtime), peak_mem_mb=None if peak is None else float(peak),
                            cpu_efficiency=efficiency)

    def inputs(self, node: Node, fld: str, workdir: str) -> tuple[str, ...]:
        items = node.value if isinstance(node, SequenceNode) else [node]
        out = []
        for item in items:
            raw = self.text(item, fld, "a file path")
            if "\x00" in raw or "\n" in raw:
                raise self.error(item, fld, "a path contains a NUL byte or a newline", "write plain paths")
            out.append(os.path.normpath(os.path.join(workdir, os.path.expanduser(raw))))
        return tuple(out)

    def check_after(self, stages: list[StageSpec], after_nodes: list[Node | None]) -> None:
        index = {s.name: i for i, s in enumerate(stages)}
        for i, (stage, node) in enumerate(zip(stages, after_nodes)):
            for pred in stage.after:
                if pred == stage.name:
                    raise self.error(node, f"stages[{i}].after",
                                     f"stage '{stage.name}' is after itself (a cycle)",
                                     "remove its own name from after")
                if pred not in index:
                    close = difflib.get_close_matches(pred, index.keys(), n=1, cutoff=0.6)
                    hint = f"did you mean '{close[0]}'? " if close else ""
                    raise self.error(node, f"stages[{i}].after", f"no stage named '{pred}'",
                                     f"{hint}after names stages of this workflow: {_short_list(index)}")
        order = topo_indices(tuple(stages), index)
        if len(order) == len(stages):
            return
        cycle = _find_cycle(stages, index, set(range(len(stages))) - set(order))
        first = min(cycle)
        i_node = after_nodes[first]
        ring = cycle + [cycle[0]]
        links = [f"{stages[a].name} is after {stages[b].name}" for a, b in zip(ring, ring[1:])]
        if len(links) > 8:  # a cycle through thousands of stages: its two ends say enough
            links = links[:4] + [f"… ({len(cycle)} stages in the cycle) …"] + links[-3:]
        path = ", ".join(links)
        raise self.error(i_node if i_node is not None else stages[first].line, f"stages[{first}].after",
                         f"the stages' after form a cycle: {path}",
                         "a workflow must be a DAG; remove one of these dependencies")


def _find_cycle(stages: list[StageSpec], index: Mapping[str, int], remaining: set[int]) -> list[int]:
    """One cycle among the stages Kahn's algorithm could not order, as a list where each stage is
    after the next, rotated to start at its first stage in the file."""
    # Every remaining stage has a remaining predecessor, so walking predecessors must repeat.
    start = min(remaining)
    seen_at: dict[int, int] = {}
    walk: list[int] = []
    node = start
    while node not in seen_at:
        seen_at[node] = len(walk)
        walk.append(node)
        node = next(index[p] for p in stages[node].after if index[p] in remaining)
    cycle = walk[seen_at[node]:]  # each stage is after the next one (and the last after the first)
    pivot = cycle.index(min(cycle))
    return cycle[pivot:] + cycle[:pivot]


# --------------------------------------------------------------------------------------------
# Small helpers


def _name_problem(text: str) -> str:
    if not text:
        return "is empty"
    if len(text) > NAME_MAX_LEN:
        return f"is {len(text)} characters long"
    if _NAME_RE.match(text):
        return ""
    for ch in text:
        if ch.isspace():
            return "contains whitespace"
        if ord(ch) > 127:
            return f"contains the non-ASCII character {ch!r}"
        if not (ch.isalnum() or ch in "._-"):
            return f"contains {ch!r}"
    return f"starts with {text[0]!r}"


def _sizing_agent_names() -> list[str] | None:
    """The sizing registry's agent names and aliases (None if the registry is not importable)."""
    try:
        from asad.sizing import registry
    except ImportError:
        return None
    names = list(registry.agent_names())
    return names + [a for a in getattr(registry, "ALIASES", {}) if a not in names] + ["off"]



def _indent_of(text: str, line_index: int) -> str:
    """The leading whitespace of a 0-based line of text."""
    start = 0
    for _ in range(line_index):
        start = text.find("\n", start) + 1
        if start == 0:
            return ""
    end = text.find("\n", start)
    line = text[start:] if end < 0 else text[start:end]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _is_null(node: Node) -> bool:
    """An empty or ``~``/``null`` value (quoted text resolves to str, so it is never null)."""
    return isinstance(node, ScalarNode) and node.tag == _TAG_NULL


def _kind(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    if _is_null(node):
        return "nothing"
    return f"'{node.value}'"


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def _mapping_fix(fld: str) -> str:
    if fld == "":
        return "the file must be key: value lines, starting with name: and stages:"
    if fld.startswith("stages[") and fld.endswith("]"):
        return "each stage is key: value lines under '- ', e.g. '- name: align' then 'run: ...'"
    if fld.endswith("simulate"):
        return "write e.g. simulate: {runtime: 10m, peak_mem: 2G, cpu_efficiency: 0.9}"
    return "write key: value lines indented under this key"


def _suggest_key(key: str, known: tuple[str, ...]) -> str:
    lowered = key.lower()
    target = _SYNONYMS.get(lowered) or _SYNONYMS.get(lowered.replace("-", "_"))
    if target not in known:
        target = lowered.replace("-", "_") if lowered.replace("-", "_") in known else None
    if target is None:
        close = difflib.get_close_matches(lowered, known, n=1, cutoff=0.6)
        target = close[0] if close else None
    listing = f"known keys: {', '.join(known)}"
    return f"did you mean '{target}'? ({listing})" if target else listing


def _short_list(names: Iterable[str], limit: int = 10) -> str:
    names = list(names)
    shown = ", ".join(names[:limit])
    return shown + (f", … ({len(names)} in all)" if len(names) > limit else "")


def _yaml_fix(problem: str) -> str:
    if "tab" in problem:
        return "YAML indents with spaces only; replace the tab"
    if "mapping values are not allowed" in problem:
        return "check the indentation here, and quote a value that contains ': '"
    if "expected <block end>" in problem or "did not find expected" in problem:
        return "check the indentation and that brackets and quotes are closed"
    if "quoted scalar" in problem:
        return "close the quote that starts here"
    if "found undefined alias" in problem:
        return "define the &anchor before using *alias"
    if "expected a single document" in problem:
        return "one workflow per file: remove the extra '---'"
    if "special characters are not allowed" in problem:
        return "remove control characters (such as NUL) from the file"
    return "check the indentation and quoting near this line"


# --------------------------------------------------------------------------------------------
# `python -m asad.spec FILE...`: validate files and show what asad understood


def describe(spec: WorkflowSpec) -> str:
    """A short, squeue-like summary of a validated workflow (one row per stage, in run order)."""
    rows = [("STAGE", "AFTER", "NODES", "CPUS", "MEM/NODE", "TIME", "PARTITION", "RUN")]
    for name in spec.topo_order():
        s = spec.stage(name)
        run = ("script " if s.run_is_script else "") + " ".join(s.run.split())
        rows.append((s.name, ",".join(s.after) or "-", str(s.nodes), str(s.cpus),
                     format_mem(s.mem_per_node_mb()), format_duration(s.time_s), s.partition or "(default)",
                     run if len(run) <= 40 else run[:39] + "…"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = [f"workflow {spec.name}: {len(spec.stages)} stages, strategy {spec.strategy}"
             + (f" ({spec.mode})" if spec.strategy == "asa" else "") + f", workdir {spec.workdir}"]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def main(argv: list[str] | None = None) -> int:
    import sys

    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python -m asad.spec WORKFLOW.yaml [...]", file=sys.stderr)
        return 2
    status = 0
    for path in paths:
        try:
            print(describe(load_workflow(path)))
        except SpecError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
