"""Reading a YAML node tree value by value, for ``asad.spec.load``: every key and value keeps its line,
scalars are read as the user wrote them, and every problem is a :class:`SpecError` that names
the line, the field and the fix.

:class:`NodeReader` knows YAML (mappings with ``<<`` merges, text, whole numbers, durations,
memory sizes, names, one-of choices, the composer's errors); the workflow's own schema is
``asad.spec.load``'s parser, a subclass.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from typing import Any, ClassVar

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from asad.spec.model import SpecError
from asad.common.units import UnitError, parse_duration_s, parse_mem_mb

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
SLURM_WORD_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*\Z")  # partition, account, qos

TAG_NULL = "tag:yaml.org,2002:null"
TAG_BOOL = "tag:yaml.org,2002:bool"
TAG_INT = "tag:yaml.org,2002:int"
TAG_FLOAT = "tag:yaml.org,2002:float"
TAG_STR = "tag:yaml.org,2002:str"
TAG_MERGE = "tag:yaml.org,2002:merge"

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


class NodeReader:
    """Typed values out of composed YAML nodes; a subclass sets the vocabulary of its messages."""

    # words people reach for (from other tools) → the key they mean, for "did you mean" hints
    synonyms: ClassVar[Mapping[str, str]] = {}
    # loose spellings of a choice → the choice
    choice_aliases: ClassVar[Mapping[str, str]] = {}

    def __init__(self, shown_path: str):
        self.path = shown_path
        self.constructor = yaml.constructor.SafeConstructor()
        self.merge_cache: dict[int, dict[str, tuple[Node, Node]]] = {}  # nodes live as long as the parse
        # Problems noted so far: a parse goes on past one (an unknown key is left out, a bad value
        # falls back) to report every problem of the file at once (raise_noted).
        self.noted: list[SpecError] = []
        self.suggested: set[str] = set()  # fields an unknown key's "did you mean" named (stages, stages[0].run)

    def note(self, exc: SpecError) -> None:
        self.noted.extend(getattr(exc, "errors", None) or [exc])

    def attempt(self, fn, *args, fallback=None, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
        """``fn(*args, **kwargs)``; a SpecError it raises is noted and ``fallback`` returned."""
        try:
            return fn(*args, **kwargs)
        except SpecError as exc:
            self.note(exc)
            return fallback

    def missing(self, node: Node, fld: str, key: str, problem: str, fix: str) -> SpecError:
        """The error for a missing required ``key`` of the mapping at ``fld``: none of its own when an
        unknown key was taken for it (``stage:`` for ``stages:``; "did you mean" says it already),
        then that problem again, to stop the read of what lacks the key."""
        if join_field(fld, key) in self.suggested and self.noted:
            return self.noted.pop()  # noted again by whoever catches it
        return self.error(node, join_field(fld, key) if not fld.endswith("]") else fld, problem, fix)

    def raise_noted(self, exc: SpecError | None = None) -> None:
        """Raise every problem noted (with ``exc``, the one that stopped the parse): one alone as
        itself, several as a SpecErrors."""
        if exc is not None and exc not in self.noted and not hasattr(exc, "errors"):  # not raised from here
            self.note(exc)
        if len(self.noted) == 1:
            raise self.noted[0]
        if self.noted:
            from asad.spec.model import SpecErrors

            raise SpecErrors(self.noted)

    def mapping_fix(self, fld: str) -> str:
        """How to write the mapping ``fld`` should be."""
        return "write key: value lines indented under this key"

    def suggest_key(self, key: str, known: tuple[str, ...], fld: str | None = None) -> str:
        lowered = key.lower()
        target = self.synonyms.get(lowered) or self.synonyms.get(lowered.replace("-", "_"))
        if target not in known:
            target = lowered.replace("-", "_") if lowered.replace("-", "_") in known else None
        if target is None:
            close = difflib.get_close_matches(lowered, known, n=1, cutoff=0.6)
            target = close[0] if close else None
        listing = f"known keys: {', '.join(known)}"
        if target and fld is not None:
            self.suggested.add(join_field(fld, target))
        return f"did you mean '{target}'? ({listing})" if target else listing

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
            raise self.error(node, fld, f"{subject} be a mapping (key: value lines), got {kind_of(node)}",
                             self.mapping_fix(fld))
        merged: dict[str, tuple[Node, Node]] = {}
        out: dict[str, tuple[Node, Node]] = {}
        own: dict[str, Node] = {}
        for key_node, value_node in node.value:
            if key_node.tag == TAG_MERGE:
                merged.update(self._merged(value_node, fld))
                continue
            if not isinstance(key_node, ScalarNode):
                raise self.error(key_node, fld, f"a key in {what} is {kind_of(key_node)}", "keys are plain words")
            key = key_node.value
            if key in own:
                raise self.error(key_node, join_field(fld, key),
                                 f"duplicate key '{key}' (first at line {own[key].start_mark.line + 1})",
                                 "keep only one of them")
            own[key] = key_node
            if key not in known:  # noted, and left out: the rest of the mapping is still read
                self.note(self.error(key_node, fld, f"unknown key '{key}' in {what}", self.suggest_key(key, known, fld)))
                continue
            out[key] = (key_node, value_node)
        for key, (key_node, _) in list(merged.items()):
            if key not in known:
                self.note(self.error(key_node, fld, f"unknown key '{key}' in {what} (merged with <<)",
                                     self.suggest_key(key, known, fld)))
                del merged[key]
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
                if key_node.tag == TAG_MERGE:
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
            raise self.error(node, fld, f"must be {what}, got {kind_of(node)}", f"write {what} as one value")
        if is_null(node):
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

    def positive_int(self, node: Node, fld: str, *, allow_zero: bool = False) -> int:
        what = "a whole number ≥ 0" if allow_zero else "a positive whole number"
        if not isinstance(node, ScalarNode) or node.tag in (TAG_NULL, TAG_BOOL):
            got = kind_of(node) if not isinstance(node, ScalarNode) else f"'{node.value}'"
            raise self.error(node, fld, f"must be {what}, got {got}", "write e.g. 4")
        raw = node.value.strip()
        number = None
        if node.tag == TAG_INT:
            number = self.number(node)
        elif node.tag == TAG_STR and re.fullmatch(r"[+-]?\d+", raw):
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
        if not isinstance(node, ScalarNode) or node.tag in (TAG_NULL, TAG_BOOL):
            raise self.error(node, fld, f"must be a duration, got {kind_of(node)}",
                             "write e.g. 90s, 10m, 2h, 1d or 1-02:00:00")
        raw: Any = node.value
        if node.tag in (TAG_INT, TAG_FLOAT) and ":" not in raw:
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
        if not isinstance(node, ScalarNode) or node.tag in (TAG_NULL, TAG_BOOL):
            raise self.error(node, fld, f"must be a memory size, got {kind_of(node)}", "write e.g. 500M, 4G")
        raw: Any = node.value
        if node.tag in (TAG_INT, TAG_FLOAT):
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
            if not SLURM_WORD_RE.match(word):
                hint = "a comma list like a,b" if allow_list else "one name"
                raise self.error(node, fld, f"{what} {word!r} is not a valid Slurm {what} name",
                                 f"write {hint} of letters, digits, '-', '_', '.'")
        return ",".join(words)

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
        guess = normalised if normalised in allowed else self.choice_aliases.get(normalised.replace("-", ""))
        close = [guess] if guess else difflib.get_close_matches(normalised, allowed, n=1, cutoff=0.5)
        hint = f"did you mean '{close[0]}'? " if close else ""
        what = fld.lstrip("-")
        raise self.error(node, fld, f"unknown {what} '{value}'", f"{hint}write one of: {', '.join(allowed)}")


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


def is_null(node: Node) -> bool:
    """An empty or ``~``/``null`` value (quoted text resolves to str, so it is never null)."""
    return isinstance(node, ScalarNode) and node.tag == TAG_NULL


def kind_of(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    if is_null(node):
        return "nothing"
    return f"'{node.value}'"


def join_field(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


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
