"""workflow.yaml → a validated, frozen :class:`WorkflowSpec`: the file's schema (the objects:
``asad.spec.model``; typed values out of YAML nodes: ``asad.spec.yaml_values``; the check against a
cluster's partitions: ``asad.spec.cluster``, re-exported here with the objects).

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

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from asad.common.arrays import ArrayError, parse_array
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
    shown_path,
    topo_indices,
)
from asad.spec.slurm_keys import (
    MAIL_KEYS,
    MAIL_TYPES,
    SLURM_OPTION_KEYS,
    SlurmOptions,
    check_constraint,
    check_gres,
    check_mail,
    check_output,
    check_setup,
    output_folder_problem,
)
from asad.spec.keys import DEFAULT_KEYS, SIMULATE_KEYS, STAGE_KEYS, TOP_KEYS
from asad.spec.keys import SYNONYMS as _SYNONYMS
from asad.spec.yaml_values import (
    SLURM_WORD_RE,
    TAG_BOOL,
    TAG_INT,
    TAG_MERGE,
    TAG_NULL,
    NodeReader,
    is_null,
    kind_of,
)

__all__ = [
    "DEFAULT_STRATEGY", "DEFAULT_TIME_S", "MODES", "STRATEGIES", "FrozenMap", "SimulateSpec",
    "SpecError", "StageSpec", "WorkflowSpec", "check_against_cluster", "load_workflow",
    "parse_workflow",
]

_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
SCRIPT_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh", ".py", ".pl", ".R", ".r", ".sbatch", ".slurm")



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


class _Parser(NodeReader):
    """The workflow file's schema, read with :class:`NodeReader`'s typed values."""

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
            if not (isinstance(node, ScalarNode) and node.tag == TAG_BOOL):
                raise self.error(node, fld, f"must be true or false, got {kind_of(node)}",
                                 "write exclusive: true for whole nodes")
            return node.value.lower() in ("true", "yes", "on")
        if key == "gpus":
            return self.positive_int(node, fld)
        if key == "mail":
            fix = 'write e.g. mail: {type: "END,FAIL", user: me@example.org} or type: [END, FAIL]'
            if isinstance(node, MappingNode):  # {type: END,FAIL}: YAML reads FAIL as a key of its own
                stray = [k.value for k, _ in node.value if isinstance(k, ScalarNode) and k.value.upper() in MAIL_TYPES]
                if stray:
                    raise self.error(node, fld, f"'{stray[0]}' reads as a key of its own: in {{...}} a comma "
                                     "separates keys, so a list of types needs quotes", fix)
            m = self.mapping(node, fld, "mail", MAIL_KEYS)
            types = self.mail_types(m["type"][1], f"{fld}.type") if "type" in m else ["END", "FAIL"]
            user = self.text(m["user"][1], f"{fld}.user", "a mail address") if "user" in m else None
            problem = check_mail(types, user)
            if problem:
                raise self.error(node, fld, problem, fix)
            return (",".join(t.upper() for t in types), user)
        text = self.text(node, fld, key)
        check = {"output": check_output, "constraint": check_constraint, "gres": check_gres}[key]
        problem = check(text)
        if problem:
            hints = {"output": "write a file pattern such as logs/%x-%j.out (relative to workdir)",
                     "constraint": "write e.g. constraint: 'skylake&ib'", "gres": "write e.g. gres: gpu:2"}
            raise self.error(node, fld, problem, hints[key])
        return text

    def mail_types(self, node: Node, fld: str) -> list[str]:
        """``END,FAIL`` (sbatch's own text) or a YAML list ``[END, FAIL]``."""
        if isinstance(node, SequenceNode):
            return [self.text(item, fld, "a mail type").strip() for item in node.value]
        return self.text(node, fld, "mail types").replace(" ", "").split(",")

    def env(self, node: Node, fld: str) -> dict[str, str]:
        if isinstance(node, ScalarNode) and node.tag == TAG_NULL:
            return {}
        if not isinstance(node, MappingNode):
            raise self.error(node, fld, f"must be a mapping of NAME: value, got {kind_of(node)}",
                             "write e.g. env: {OMP_NUM_THREADS: 4}")
        out: dict[str, str] = {}
        merged: dict[str, tuple[Node, Node]] = {}
        pairs = []
        for key_node, value_node in node.value:
            if key_node.tag == TAG_MERGE:  # env: {<<: *common, EXTRA: 1}
                merged.update(self._merged(value_node, fld))
            else:
                pairs.append((key_node, value_node))
        own_keys = {k.value for k, _ in pairs if isinstance(k, ScalarNode)}
        pairs = [pair for k, pair in merged.items() if k not in own_keys] + pairs
        for key_node, value_node in pairs:
            key = key_node.value if isinstance(key_node, ScalarNode) else None
            if key is None or not _ENV_NAME_RE.match(key):
                shown = key if key is not None else kind_of(key_node)
                raise self.error(key_node, fld, f"{shown!r} is not a valid environment variable name",
                                 "use letters, digits and '_', not starting with a digit (e.g. MY_VAR)")
            if key in out:
                raise self.error(key_node, f"{fld}.{key}", f"duplicate variable '{key}'", "keep only one")
            if not isinstance(value_node, ScalarNode):
                raise self.error(value_node, f"{fld}.{key}", f"must be a single value, got {kind_of(value_node)}",
                                 "quote it as one string, e.g. \"a b c\"")
            value = "" if is_null(value_node) else value_node.value
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

    def array(self, node: Node, fld: str) -> str:
        """``array: 0-99``, ``0-99%10``, ``1,5,10-20:2``, or a number of tasks: sbatch's own text back."""
        fix = "write e.g. array: 0-99 (tasks 0 to 99), array: 0-99%10 (at most 10 at once), or array: 100"
        if not isinstance(node, ScalarNode) or node.tag in (TAG_NULL, TAG_BOOL):
            raise self.error(node, fld, f"must be an index list or a number of tasks, got {kind_of(node)}", fix)
        value: object = self.number(node) if node.tag == TAG_INT else node.value
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
        if is_null(node):
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
            if is_null(node):
                raise self.error(node, fld, "is empty",
                                 "write after: [] for a stage that depends on nothing, or name stages")
            names = [node.value]
            items = [node]
        elif isinstance(node, SequenceNode):
            items = node.value
            names = [self.text(item, fld, "a stage name") for item in items]
        else:
            raise self.error(node, fld, f"must be a stage name or a list of them, got {kind_of(node)}",
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
                shown = eff_node.value if isinstance(eff_node, ScalarNode) else kind_of(eff_node)
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
