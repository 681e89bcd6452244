"""The values a stage (or ``defaults:``) holds, read from workflow.yaml's YAML nodes: resources,
Slurm options, ``env``, ``run``, ``array``, ``after``, ``simulate`` and ``inputs``. Each reader
returns a typed value or raises a :class:`SpecError` naming the field and the fix; the workflow's
own shape (which keys a stage has, defaults, the DAG) is ``asad.spec.load``'s.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from asad.common.arrays import ArrayError, parse_array
from asad.spec.keys import SIMULATE_KEYS
from asad.spec.model import SimulateSpec, shown_path
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
)
from asad.spec.yaml_values import TAG_BOOL, TAG_INT, TAG_MERGE, TAG_NULL, NodeReader, is_null, kind_of

_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
SCRIPT_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh", ".py", ".pl", ".R", ".r", ".sbatch", ".slurm")


class StageFieldReader(NodeReader):
    """A stage's field values; ``base_dir`` (script paths resolve against it) and ``strategy``
    (``array`` is refused under big-job) are set by the workflow's parser."""

    base_dir: Path
    strategy: str

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
