"""workflow.yaml → a validated, frozen :class:`WorkflowSpec`: the file's schema (the objects:
``asad.spec.model``; typed values out of YAML nodes: ``asad.spec.yaml_values``; a stage's field
values: ``asad.spec.stage_fields``; the check against a cluster's partitions: ``asad.spec.cluster``,
re-exported here with the objects).

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
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from yaml.nodes import Node, ScalarNode, SequenceNode

from asad.spec.cluster import check_against_cluster
from asad.spec.model import (
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
    find_cycle,
    topo_indices,
)
from asad.spec.slurm_keys import SLURM_OPTION_KEYS, output_folder_problem
from asad.spec.keys import DEFAULT_KEYS, STAGE_KEYS, TOP_KEYS
from asad.spec.keys import SYNONYMS as _SYNONYMS
from asad.spec.stage_fields import StageFieldReader
from asad.spec.yaml_values import SLURM_WORD_RE, TAG_BOOL, TAG_NULL, kind_of

__all__ = [
    "DEFAULT_STRATEGY", "DEFAULT_TIME_S", "MODES", "STRATEGIES", "FrozenMap", "SimulateSpec",
    "SpecError", "StageSpec", "WorkflowSpec", "check_against_cluster", "load_workflow",
    "parse_workflow",
]




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


class _Parser(StageFieldReader):
    """The workflow file's schema; a stage's values are read by :class:`StageFieldReader`."""

    synonyms = _SYNONYMS
    choice_aliases = {"perstage": "per-stage", "bigjob": "big-job", "big": "big-job"}

    def __init__(self, shown_path: str, base_dir: Path, abs_path: str):
        super().__init__(shown_path)
        self.base_dir = base_dir
        self.abs_path = abs_path

    def mapping_fix(self, fld: str) -> str:
        if fld == "":
            return "the file must be key: value lines, starting with name: and stages:"
        if fld.startswith("stages[") and fld.endswith("]"):
            return "each stage is key: value lines under '- ', e.g. '- name: align' then 'run: ...'"
        if fld.endswith("simulate"):
            return "write e.g. simulate: {runtime: 10m, peak_mem: 2G, cpu_efficiency: 0.9}"
        return super().mapping_fix(fld)

    def idle_price(self, node: Node) -> float:
        value = self.number(node) if isinstance(node, ScalarNode) and node.tag != TAG_BOOL else None
        if value is None or value < 0:
            shown = node.value if isinstance(node, ScalarNode) else kind_of(node)
            raise self.error(node, "idle_price", f"must be a number ≥ 0, got '{shown}'",
                             "write e.g. idle_price: 0.02 (makespan seconds one idle core-second is worth; "
                             "lower submits earlier)")
        return float(value)

    # ---- the file ----------------------------------------------------------------------------

    def parse(self, text: str, strategy_override: str | None) -> WorkflowSpec:
        """The workflow, or every problem of the file at once (SpecErrors): each top-level field and
        each stage is read on past another's problem; one that leaves nothing to read on stops it."""
        try:
            spec = self._parse(text, strategy_override)
        except SpecError as exc:
            self.raise_noted(exc)
        self.raise_noted()
        return spec

    def _parse(self, text: str, strategy_override: str | None) -> WorkflowSpec:
        root = self.compose(text)
        top = self.mapping(root, "", "the workflow file", TOP_KEYS)

        wf_name = "?"
        if "name" not in top:
            self.note(self.missing(root, "", "name", "missing required field 'name'", "add e.g. name: montage at the top"))
        else:
            wf_name = self.attempt(self.name, top["name"][1], "name", "workflow", fallback="?")

        strategy = self.attempt(self.choice, top.get("strategy"), "strategy", STRATEGIES, DEFAULT_STRATEGY,
                                fallback=DEFAULT_STRATEGY)
        if strategy_override is not None:
            strategy = self.choice_text(strategy_override, None, "--strategy", STRATEGIES)
        self.strategy = strategy
        mode = self.attempt(self.choice, top.get("mode"), "mode", MODES, DEFAULT_MODE, fallback=DEFAULT_MODE)

        workdir = self.attempt(self.workdir, top.get("workdir"), fallback=str(self.base_dir))
        sizing = self.attempt(self.sizing, top.get("sizing"), "sizing")
        idle_price = self.attempt(self.idle_price, top["idle_price"][1]) if "idle_price" in top else None
        defaults = self.attempt(self.defaults, top.get("defaults"), fallback={})

        if "stages" not in top:
            raise self.missing(root, "", "stages", "missing required field 'stages'",
                               "add a list of stages, each starting with '- name: ...' and a run: command")
        stages_node = top["stages"][1]
        if isinstance(stages_node, ScalarNode) and stages_node.tag == TAG_NULL:
            raise self.error(stages_node, "stages", "the workflow has no stages", "add at least one stage under stages:")
        if not isinstance(stages_node, SequenceNode):
            raise self.error(stages_node, "stages", f"must be a list of stages, got {kind_of(stages_node)}",
                             "start each stage with '- name: ...' under stages:")
        if not stages_node.value:
            raise self.error(stages_node, "stages", "the workflow has no stages", "add at least one stage under stages:")

        stages: list[StageSpec] = []
        after_nodes: list[Node | None] = []
        seen: dict[str, int] = {}
        complete = True  # every stage read: only then can after: be checked against the names
        for i, item in enumerate(stages_node.value):
            read = self.attempt(self.stage, item, i, defaults, workdir, stages[-1].name if stages else None)
            if read is None:
                complete = False
                continue
            stage, after_node = read
            if stage.name in seen:
                self.note(self.error(item, f"stages[{i}].name",
                                     f"duplicate stage name '{stage.name}' (first at line {seen[stage.name]})",
                                     "give every stage its own name"))
                continue
            seen[stage.name] = stage.line
            stages.append(stage)
            after_nodes.append(after_node)
        if complete:
            self.check_after(stages, after_nodes)
        self.raise_noted()  # a workflow is built from a file without problems only
        return WorkflowSpec(name=wf_name, strategy=strategy, stages=tuple(stages), workdir=workdir,
                            path=self.abs_path, mode=mode, sizing=sizing, idle_price=idle_price)

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
        if known is None and not SLURM_WORD_RE.match(value):
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
        if isinstance(node, ScalarNode) and node.tag == TAG_NULL:
            return {}
        m = self.mapping(node, "defaults", "defaults", DEFAULT_KEYS)
        out: dict[str, Any] = {}
        for key, (_, value) in m.items():  # each value on its own: every bad one is reported
            self.attempt(lambda k=key, v=value: out.__setitem__(k, self.resource_value(k, v, f"defaults.{k}")))
        if "mem" in out and "mem_per_cpu" in out:
            raise self.error(m["mem_per_cpu"][0], "defaults.mem_per_cpu", "mem and mem_per_cpu both given",
                             "give memory per node (mem) or per CPU (mem_per_cpu), not both")
        return out

    # ---- one stage ---------------------------------------------------------------------------

    def stage(self, item: Node, i: int, defaults: dict[str, Any], workdir: str,
              previous: str | None) -> tuple[StageSpec, Node | None]:
        where = f"stages[{i}]"
        m = self.mapping(item, where, "a stage", STAGE_KEYS)
        line = item.start_mark.line + 1
        if "name" not in m:
            raise self.missing(item, where, "name", "missing required field 'name'", "add name: <stage name> to this stage")
        name = self.name(m["name"][1], f"{where}.name", "stage")
        if "run" not in m:
            raise self.missing(item, where, "run", f"stage '{name}' is missing required field 'run'",
                               "add run: <a command line or a script path>")
        run, run_is_script = self.run(m["run"][1], f"{where}.run")

        values: dict[str, Any] = {}
        noted = len(self.noted)
        for key in ("cpus", "nodes", "ntasks", "cpus_per_task", "mem", "mem_per_cpu", "time", "retries",
                    "max_oom_retries", "partition", "account", "qos", "env", *SLURM_OPTION_KEYS):
            if key in m:  # each value on its own: every bad one is reported
                self.attempt(lambda k=key: values.__setitem__(k, self.resource_value(k, m[k][1], f"{where}.{k}")))
        if len(self.noted) > noted:  # not built from what is left: the stage's reader notes it as failed
            raise self.noted.pop()  # (the last problem, noted again by the caller's attempt)

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
        problem = output_folder_problem(workdir, stage.slurm.output) if stage.slurm.output else None
        if problem:
            raise self.error(m["output"][1] if "output" in m else item, f"{where}.output", problem,
                             "remove or rename what is in the way, or choose another 'output:' folder")
        return stage, after_node

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
        cycle = find_cycle(stages, index, set(range(len(stages))) - set(order))
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


# --------------------------------------------------------------------------------------------
# Small helpers


def _sizing_agent_names() -> list[str] | None:
    """The sizing registry's agent names and aliases (None if the registry is not importable)."""
    try:
        from asad.sizing import registry
    except ImportError:
        return None
    names = list(registry.agent_names())
    return names + [a for a in getattr(registry, "ALIASES", {}) if a not in names] + ["off"]


def _short_list(names: Iterable[str], limit: int = 10) -> str:
    names = list(names)
    shown = ", ".join(names[:limit])
    return shown + (f", … ({len(names)} in all)" if len(names) > limit else "")
