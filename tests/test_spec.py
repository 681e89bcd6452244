"""workflow.yaml: examples load, every broken file gives its own message, the spec's graph API."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import re
from pathlib import Path

import pytest

from asad.slurm.backend import PartitionInfo
from asad.spec.load import (
    FrozenMap,
    SimulateSpec,
    SpecError,
    StageSpec,
    WorkflowSpec,
    check_against_cluster,
    load_workflow,
    parse_workflow,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
BROKEN = sorted((Path(__file__).parent / "broken").glob("*.yaml"))
# Files that cannot carry a header comment.
NO_HEADER = {"empty.yaml": ("the file is empty", 0)}

# The cluster the `# check: cluster` files are checked against: the simulator's `small` preset
# shape (4 × 28 cores) with the single-host test Slurm's memory, plus a one-node debug partition.
CLUSTER = [
    PartitionInfo("batch", nodes=4, cpus_per_node=28, mem_per_node_mb=16000, max_time_s=2 * 86400, default=True),
    PartitionInfo("debug", nodes=1, cpus_per_node=28, mem_per_node_mb=16000, max_time_s=1800, max_nodes=1),
]


def _header(path: Path) -> tuple[str, int, bool]:
    if path.name in NO_HEADER:
        expect, line = NO_HEADER[path.name]
        return expect, line, False
    text = path.read_text(encoding="utf-8")
    expect = re.search(r"^# expect: (.+)$", text, re.M)
    line = re.search(r"^# expect-line: (\d+)$", text, re.M)
    assert expect, f"{path.name} has no '# expect:' header"
    return expect.group(1), int(line.group(1)) if line else 0, "# check: cluster" in text


def test_corpus_is_big_enough():
    assert len(BROKEN) >= 20


@pytest.mark.parametrize("path", BROKEN, ids=[p.name for p in BROKEN])
def test_broken_file_gives_its_message(path: Path):
    expect, line, against_cluster = _header(path)
    with pytest.raises(SpecError) as info:
        spec = load_workflow(path)
        assert against_cluster, f"{path.name} loaded without error"
        check_against_cluster(spec, CLUSTER)
    err = info.value
    message = str(err)
    assert expect in message, f"{path.name}: {message}"
    assert err.line == line, f"{path.name}: line {err.line}, expected {line}: {message}"
    # file, line and field come first, then the problem, then (always) how to fix it
    assert os.path.abspath(err.path) == str(path)  # as given, or relative to the current folder
    assert message.startswith(f"{err.path}:{line}: " if line else f"{err.path}: ")
    assert err.problem and err.fix, message
    assert " — " in message


def test_cluster_files_load_before_the_cluster_check():
    """The cluster cases are valid files: only the cluster refuses them."""
    for path in BROKEN:
        if path.name not in NO_HEADER and _header(path)[2]:
            load_workflow(path)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_loads_and_fits_the_small_cluster(path: Path):
    spec = load_workflow(path)
    check_against_cluster(spec, CLUSTER)
    assert spec.path == str(path.resolve())
    assert spec.topo_order()[0] in spec.roots()
    for stage in spec.stages:
        assert stage.simulate is not None and stage.simulate.runtime_s > 0
        assert stage.simulate.peak_mem_mb is not None
        assert stage.simulate.peak_mem_mb <= stage.mem_per_node_mb(), stage.name
        assert stage.simulate.runtime_s <= stage.time_s, stage.name


def test_example_shapes_follow_the_paper():
    montage = load_workflow(ROOT / "examples/montage.yaml")
    assert len(montage.stages) == 9
    assert montage.topo_order() == [s.name for s in montage.stages]  # nine ordered stages
    parallel = [i + 1 for i, s in enumerate(montage.stages) if s.cpus > 1]
    assert parallel == [1, 2, 5]  # paper 4.3: parallel first two and fifth
    work_s = sum(s.simulate.runtime_s for s in montage.stages)
    per_stage_ch = sum(s.simulate.runtime_s * s.cpus for s in montage.stages) / 3600
    assert 1000 < work_s < 1300 and 6 < per_stage_ch < 8  # Table 1 at 28 cores: ~7 CH per stage
    blast = load_workflow(ROOT / "examples/blast.yaml")
    assert [s.cpus > 1 for s in blast.stages] == [True, False]
    stats = load_workflow(ROOT / "examples/statistics.yaml")
    assert [s.cpus > 1 for s in stats.stages] == [False, True, False, True]
    assert stats.stage("aggregate").nodes == 2 and stats.stage("aggregate").cpus == 56
    dag = load_workflow(ROOT / "examples/dag.yaml")
    assert dag.successors("prepare") == ("align_a", "align_b", "align_c")
    assert dag.predecessors("merge") == ("align_a", "align_b", "align_c")
    report = dag.stage("report")
    assert report.run_is_script and Path(report.run).is_file() and report.after == ("merge",)


def test_defaults_inheritance_and_overrides():
    spec = parse_workflow(
        """
name: inherit
defaults:
  partition: batch,debug
  account: proj1
  qos: normal
  time: 2h
  mem: 4G
  cpus: 2
  retries: 1
  env: {A: "1", B: two}
stages:
  - name: a
    run: echo a
  - name: b
    run: echo b
    cpus: 8
    mem_per_cpu: 1G
    time: "1:30:00"
    partition: debug
    qos: high
    env: {B: three, C: yes}
  - name: c
    run: echo c
    nodes: 2
"""
    )
    a, b, c = spec.stages
    assert (a.partition, a.account, a.qos, a.time_s, a.mem_mb, a.cpus, a.retries) == (
        "batch,debug", "proj1", "normal", 7200, 4096, 2, 1)
    assert a.partitions == ["batch", "debug"]
    assert a.env_dict() == {"A": "1", "B": "two"}
    # the stage's own memory form replaces the default's (no mem + mem_per_cpu conflict)
    assert (b.mem_mb, b.mem_per_cpu_mb, b.cpus, b.time_s, b.partition, b.qos, b.account) == (
        None, 1024, 8, 5400, "debug", "high", "proj1")
    assert b.total_mem_mb() == 8 * 1024
    assert b.env_dict() == {"A": "1", "B": "three", "C": "yes"}  # scalars kept as written
    # a stage that sets any geometry key takes none of the default cpus
    assert (c.nodes, c.ntasks, c.cpus_per_task) == (2, 2, 1)
    assert c.total_mem_mb() == 2 * 4096
    assert spec.strategy == "auto" and spec.mode == "dependency"


def test_scalars_are_read_as_written():
    spec = parse_workflow(
        """
name: literal
stages:
  - name: "007"
    run: true
    time: 1:30
  - name: b
    run: "echo a: b"
    time: 90
    mem: 1024
    simulate: {runtime: 1.5, peak_mem: 0.5G}
"""
    )
    first, second = spec.stages
    assert first.name == "007" and first.run == "true"
    assert first.time_s == 90  # Slurm's MM:SS, not YAML 1.1's sexagesimal integer
    assert second.time_s == 90 * 60  # a bare number is minutes, as sbatch --time
    assert second.mem_mb == 1024  # a bare number is MB, as sbatch --mem
    assert second.simulate == SimulateSpec(runtime_s=90.0, peak_mem_mb=512.0, cpu_efficiency=1.0)


def test_after_defaults_to_previous_and_explicit_empty_means_none():
    spec = parse_workflow(
        """
name: deps
stages:
  - {name: a, run: echo a}
  - {name: b, run: echo b}
  - {name: c, run: echo c, after: []}
  - {name: d, run: echo d, after: [a, c, a]}
"""
    )
    assert [s.after for s in spec.stages] == [(), ("a",), (), ("a", "c")]
    assert spec.roots() == ("a", "c")
    assert spec.leaves() == ("b", "d")
    assert spec.successors("a") == ("b", "d")


def test_topo_order_respects_every_edge_and_file_order_on_ties():
    spec = parse_workflow(
        """
name: topo
stages:
  - {name: report, run: echo r, after: [merge]}
  - {name: merge, run: echo m, after: [x, y]}
  - {name: y, run: echo y, after: [prep]}
  - {name: x, run: echo x, after: [prep]}
  - {name: prep, run: echo p, after: []}
  - {name: lone, run: echo l, after: []}
"""
    )
    order = spec.topo_order()
    assert order == ["prep", "y", "x", "merge", "report", "lone"]
    position = {n: i for i, n in enumerate(order)}
    for stage in spec.stages:
        for pred in stage.after:
            assert position[pred] < position[stage.name]


def test_line_numbers_point_at_the_stage_and_the_field():
    text = "name: lines\n\nstages:\n  - name: a\n    run: echo a\n\n  - name: b\n    run: echo b\n    time: forever\n"
    with pytest.raises(SpecError) as info:
        parse_workflow(text, "lines.yaml")
    assert (info.value.line, info.value.field) == (9, "stages[1].time")
    assert str(info.value).startswith("lines.yaml:9: stages[1].time: 'forever' is not a duration — ")
    spec = parse_workflow(text.replace("forever", "5m"))
    assert [s.line for s in spec.stages] == [4, 7]


def test_round_trip_to_dict_from_dict():
    for path in EXAMPLES:
        spec = load_workflow(path)
        data = json.loads(json.dumps(spec.to_dict()))
        again = WorkflowSpec.from_dict(data)
        assert again == spec
        assert again.to_dict() == spec.to_dict()
        assert hash(again) == hash(spec)
        assert again.successors(again.stages[0].name) == spec.successors(spec.stages[0].name)


def test_strategy_override_and_its_validation():
    path = ROOT / "examples/demo.yaml"
    assert load_workflow(path, strategy="chain").strategy == "chain"
    with pytest.raises(SpecError) as info:
        load_workflow(path, strategy="per_stage")
    assert "--strategy: unknown strategy 'per_stage' — did you mean 'per-stage'?" in str(info.value)


def test_yaml_anchors_and_merge_keys():
    spec = parse_workflow(
        """
name: merges
defaults: &d {time: 1h, mem: 1G}
stages:
  - &base {name: a, run: echo a, cpus: 16, mem: 8G}
  - {<<: *base, name: b, mem: 2G}
  - {<<: [*d, *base], name: c, run: echo c}
"""
    )
    a, b, c = spec.stages
    assert (a.cpus, a.mem_mb, a.time_s) == (16, 8192, 3600)
    assert (b.cpus, b.mem_mb, b.run, b.after) == (16, 2048, "echo a", ("a",))
    # earlier merge sources win (YAML's rule): mem from *d; *d's time is a stage key too
    assert (c.cpus, c.mem_mb, c.time_s, c.run) == (16, 1024, 3600, "echo c")


def test_run_keeps_any_text_and_script_paths_resolve(tmp_path: Path):
    script = tmp_path / "steps" / "one.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\necho one\n")
    wf = tmp_path / "wf.yaml"
    wf.write_text(
        "name: scripts\nworkdir: out\nstages:\n"
        "  - name: one\n    run: steps/one.sh\n"
        "  - name: two\n    run: 'echo \"$(date)\" > `x`; rm -f -- \"*\" && echo ünïcödé | tee a'\n"
        "  - name: three\n    run: hostname\n    inputs: [data/*.fits, /abs/in.txt]\n"
    )
    spec = load_workflow(wf)
    one, two, three = spec.stages
    assert one.run_is_script and one.run == str(script)
    assert not two.run_is_script and two.run == "echo \"$(date)\" > `x`; rm -f -- \"*\" && echo ünïcödé | tee a"
    assert not three.run_is_script and three.run == "hostname"
    assert spec.workdir == str(tmp_path / "out")
    assert three.inputs == (str(tmp_path / "out/data/*.fits"), "/abs/in.txt")


def test_workdir_defaults_to_the_files_folder_and_expands_variables(tmp_path: Path, monkeypatch):
    wf = tmp_path / "wf.yaml"
    wf.write_text("name: w\nstages: [{name: a, run: echo a}]\n")
    assert load_workflow(wf).workdir == str(tmp_path)
    monkeypatch.setenv("ASAD_TEST_SCRATCH", "/scratch/me")
    wf.write_text("name: w\nworkdir: $ASAD_TEST_SCRATCH/runs\nstages: [{name: a, run: echo a}]\n")
    assert load_workflow(wf).workdir == "/scratch/me/runs"


def test_file_level_errors(tmp_path: Path):
    with pytest.raises(SpecError, match="no such file"):
        load_workflow(tmp_path / "missing.yaml")
    with pytest.raises(SpecError, match="is a folder"):
        load_workflow(tmp_path)
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"name: x\nstages:\n  - name: caf\xe9\n")
    with pytest.raises(SpecError) as info:
        load_workflow(bad)
    assert info.value.line == 3 and "not UTF-8" in str(info.value)


def test_spec_error_is_picklable_and_structured():
    err = SpecError("wf.yaml", 14, "stages[3].mem", "'4 gigs' is not a memory size", "write e.g. 500M, 4G")
    assert str(err) == "wf.yaml:14: stages[3].mem: '4 gigs' is not a memory size — write e.g. 500M, 4G"
    again = pickle.loads(pickle.dumps(err))
    assert (again.path, again.line, again.field, again.problem, again.fix) == (
        err.path, err.line, err.field, err.problem, err.fix)
    assert str(SpecError("wf.yaml", 0, "", "the file is empty")) == "wf.yaml: the file is empty"


def test_stage_spec_helpers_and_hand_built_specs():
    stage = StageSpec(name="s", run="true", nodes=2, ntasks=5, cpus_per_task=4, mem_per_cpu_mb=100,
                      env={"A": "1"}, after=["x"])
    assert stage.cpus == 20 and stage.cpus_per_node == 12  # 3 tasks on the busier node
    assert stage.total_mem_mb() == 2000 and stage.mem_per_node_mb() == 1200
    assert isinstance(stage.env, FrozenMap) and stage.after == ("x",)
    assert StageSpec(name="t", run="true").total_mem_mb() is None
    stats = load_workflow(ROOT / "examples/statistics.yaml").stage("aggregate")
    assert stats.sim_peak_total_mb() == 2 * 7 * 1024  # peak_mem is per node, like mem
    assert StageSpec(name="t", run="true").sim_peak_total_mb() is None
    with pytest.raises(ValueError, match="unknown stage"):
        WorkflowSpec(name="w", strategy="asa", stages=(stage,), workdir="/", path="<string>")
    with pytest.raises(KeyError, match="no stage 'nope'"):
        parse_workflow("name: w\nstages: [{name: a, run: x}]").stage("nope")


def test_check_against_cluster_cases():
    spec = parse_workflow("name: w\nstages:\n  - {name: a, run: x, cpus: 28, mem: 15G, time: 2d}\n")
    check_against_cluster(spec, CLUSTER)  # exactly the largest batch shape fits
    check_against_cluster(spec, [])  # nothing known: nothing checked
    # no partition named, none marked default, no default given: it may use any partition
    undeclared = [PartitionInfo("small", 1, 8, 8000), PartitionInfo("large", 2, 64, 256000)]
    check_against_cluster(parse_workflow("name: w\nstages: [{name: a, run: x, cpus: 48}]"), undeclared)
    # the explicit default partition wins over the one marked default
    spec = parse_workflow("name: w\nstages: [{name: a, run: x, time: 1h}]")
    check_against_cluster(spec, CLUSTER)
    with pytest.raises(SpecError, match="allows at most 30:00"):
        check_against_cluster(spec, CLUSTER, default_partition="debug")
    # a comma list fits if any one of its partitions fits
    spec = parse_workflow("name: w\nstages: [{name: a, run: x, time: 1h, partition: 'debug,batch'}]")
    check_against_cluster(spec, CLUSTER)
    # memory per CPU counts per node
    spec = parse_workflow("name: w\nstages: [{name: a, run: x, cpus: 20, mem_per_cpu: 1G}]")
    with pytest.raises(SpecError) as info:
        check_against_cluster(spec, CLUSTER)
    assert info.value.field == "stages[0].mem_per_cpu" and "20G per node" in info.value.problem  # the key written
    # the big-job allocation is checked only under big-job
    text = "name: w\nstrategy: {s}\nstages:\n  - {{name: a, run: x, time: 30h}}\n  - {{name: b, run: x, time: 30h}}\n"
    check_against_cluster(parse_workflow(text.format(s="per-stage")), CLUSTER)
    with pytest.raises(SpecError, match="big-job allocation"):
        check_against_cluster(parse_workflow(text.format(s="big-job")), CLUSTER)
    split = parse_workflow("name: w\nstrategy: big-job\nstages:\n  - {name: a, run: x, partition: debug, time: 5m}\n"
                           "  - {name: b, run: x, partition: batch}\n")
    with pytest.raises(SpecError, match="no partition is open to every stage"):
        check_against_cluster(split, CLUSTER)


def _generated(n: int) -> list[str]:
    """A workflow of n stages, each after the previous one and the one seven back."""
    lines = ["name: huge", "defaults: {time: 10m, mem: 1G}", "stages:"]
    for i in range(n):
        after = f"[s{i - 1}, s{i - 7}]" if i >= 7 else (f"[s{i - 1}]" if i else "[]")
        lines.append(f"  - name: s{i}\n    run: echo {i}\n    cpus: {1 + i % 28}\n    after: {after}\n"
                     f"    simulate: {{runtime: {1 + i % 50}m}}")
    return lines


def test_ten_thousand_stage_workflow_loads():
    spec = parse_workflow("\n".join(_generated(10_000)) + "\n", "huge.yaml")
    assert len(spec.stages) == 10_000
    order = spec.topo_order()
    assert order[0] == "s0" and order[-1] == "s9999" and len(order) == 10_000
    assert spec.successors("s0") == ("s1", "s7")
    assert spec.stage("s9999").after == ("s9998", "s9992") and spec.stage("s9999").line == 4 + 5 * 9999


def test_cycles_in_a_big_workflow_are_found_and_named_briefly():
    lines = _generated(2_000)
    self_loop = "\n".join(lines).replace("after: [s1998, s1992]", "after: [s1998, s1992, s1999]")
    with pytest.raises(SpecError, match="stage 's1999' is after itself"):
        parse_workflow(self_loop + "\n", "huge.yaml")
    long_cycle = "\n".join(lines).replace("after: [s0]", "after: [s1999]")  # s1 is after s1999
    with pytest.raises(SpecError) as info:
        parse_workflow(long_cycle + "\n", "huge.yaml")
    assert info.value.line == 4 + 5 * 1 + 3  # s1's after line
    assert "cycle: s1 is after s1999, s1999 is after s1998," in info.value.problem
    assert "(1999 stages in the cycle)" in info.value.problem and len(info.value.problem) < 400


@pytest.mark.parametrize("line, expect", [
    ("cpus: !!int abc", "stages[0].cpus: must be a positive whole number, got 'abc'"),
    ("cpus: 99999999999999999999999", "is beyond any cluster"),
    ("time: !!int 5x", "'5x' is not a duration"),
    ("time: .nan", "'.nan' is not a duration"),
    ("time: 400d", "'400d' is longer than a year"),
    ("mem: .inf", "'.inf' is not a memory size"),
    ("mem: 0.4", "must be at least 1 MB"),
    ("mem: 2048T", "is more than a petabyte"),
    ("simulate: {runtime: 5m, cpu_efficiency: !!float abc}", "must be a number in (0, 1], got 'abc'"),
    ("simulate: {runtime: 5m, cpu_efficiency: .nan}", "must be a number in (0, 1], got '.nan'"),
    ("retries: !!python/object/apply:os.system [echo hi]", "stages[0].retries: must be a whole number ≥ 0"),
])
def test_odd_scalars_are_refused_not_crashed_on(line: str, expect: str):
    with pytest.raises(SpecError) as info:
        parse_workflow(f"name: a\nstages:\n  - name: b\n    run: x\n    {line}\n")
    assert expect in str(info.value) and info.value.line == 5


def test_runaway_nesting_is_refused_not_a_crash():
    # libyaml's composer would overflow the C stack (a segfault) on this; the loader must refuse it
    for text in ("name: a\nstages: " + "[" * 200_000 + "]" * 200_000 + "\n",
                 "name: a\nstages:\n" + "- " * 60_000 + "x\n"):
        with pytest.raises(SpecError, match="nesting deeper than 1000 levels"):
            parse_workflow(text)


def test_merge_bombs_take_linear_time():
    # 40 levels of anchors each merging the previous one twice: 2**40 merges if not memoised
    levels = ["&a0 {cpus: 2}"] + [f"&a{i} {{<<: [*a{i - 1}, *a{i - 1}]}}" for i in range(1, 41)]
    text = "name: bomb\nstages:\n  - {name: a, run: x, <<: [" + ", ".join(levels) + "]}\n"
    assert parse_workflow(text).stages[0].cpus == 2


def test_example_commands_run_and_succeed(tmp_path: Path):
    """Every example stage's `run` works as a real job would run it (sh, its env, in a scratch
    folder), with `sleep` made instant so the test stays fast."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "sleep").write_text("#!/bin/sh\nexit 0\n")
    (fake_bin / "sleep").chmod(0o755)
    for path in EXAMPLES:
        for stage in load_workflow(path).stages:
            env = {"PATH": f"{fake_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": str(tmp_path),
                   "SLURM_CPUS_PER_TASK": str(stage.cpus_per_task), "SLURM_NTASKS": str(stage.ntasks),
                   **stage.env_dict()}
            argv = ["sh", stage.run] if stage.run_is_script else ["sh", "-c", stage.run]
            done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
            assert done.returncode == 0, (path.name, stage.name, done.stderr)
            assert done.stdout.strip(), (path.name, stage.name)


def test_tabs_inside_block_text_are_fine_but_not_as_indentation():
    spec = parse_workflow("name: t\nstages:\n  - name: a\n    run: |\n      echo a\n      \tprintf 'x\\ty'\n")
    assert spec.stages[0].run == "echo a\n\tprintf 'x\\ty'\n"
    with pytest.raises(SpecError) as info:
        parse_workflow("name: t\nstages:\n  - name: a\n    run: echo a\n\tcpus: 2\n")
    assert info.value.line == 5 and "a tab in the indentation" in str(info.value)


def test_env_accepts_merges_and_own_names_win():
    text = "name: e\nstages:\n  - {name: a, run: x, env: {<<: &common {A: 1, B: 2}, B: 3}}\n"
    assert parse_workflow(text).stages[0].env_dict() == {"A": "1", "B": "3"}


def test_messages_quoted_in_the_docs_are_the_real_ones(monkeypatch):
    """docs/workflow.md quotes the corpus' messages; they must not drift from the code."""
    monkeypatch.chdir(ROOT)
    quoted = [line for line in (ROOT / "docs/workflow.md").read_text(encoding="utf-8").splitlines()
              if line.startswith("tests/broken/")]
    assert len(quoted) >= 40
    for line in quoted:
        rel = line.split(":", 1)[0]
        with pytest.raises(SpecError) as info:
            spec = load_workflow(rel)
            check_against_cluster(spec, CLUSTER)
        if line.endswith("…"):  # the docs elide a list that other modules own (sizing agents)
            assert str(info.value).startswith(line[:-1])
        else:
            assert str(info.value) == line


def test_spec_show_prints_one_row_per_stage_and_fails_on_a_broken_file(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\nstages: [{name: a, run: x, cpus: -1}]\n")
    proc = subprocess.run([sys.executable, "-m", "asad.spec.show", str(ROOT / "examples" / "montage.yaml"), str(broken)],
                          capture_output=True, text=True, cwd=tmp_path)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("workflow montage: 9 stages, strategy auto")
    assert lines[1].split()[:4] == ["STAGE", "AFTER", "NODES", "CPUS"]
    assert [line.split()[0] for line in lines[2:5]] == ["mProjectPP", "mDiffFit", "mConcatFit"]
    assert proc.returncode == 1 and "broken.yaml" in proc.stderr and "Traceback" not in proc.stderr


SEVERAL_PROBLEMS = """\
name: several
strategy: chian
defaults: {time: 5m, mem: 4 gigs}
stages:
  - name: a
    conda: myenv
    run: "true"
    cpus: -1
  - name: b
    run: "true"
    mem: lots
    time: forever
  - nme: c
    run: "true"
"""


def test_every_problem_of_a_file_is_reported_at_once():
    """Issue 36: validation reported one error at a time (fix, run, next error). Each problem now
    has its own line with its file, line and field; a missing key that an unknown one was taken
    for (``nme:`` for ``name:``) is not reported twice."""
    with pytest.raises(SpecError) as info:
        parse_workflow(SEVERAL_PROBLEMS, "several.yaml")
    lines = str(info.value).splitlines()
    assert [line.split(": ", 2)[:2] for line in lines] == [
        ["several.yaml:2", "strategy"], ["several.yaml:3", "defaults.mem"], ["several.yaml:6", "stages[0]"],
        ["several.yaml:8", "stages[0].cpus"], ["several.yaml:11", "stages[1].mem"],
        ["several.yaml:12", "stages[1].time"], ["several.yaml:13", "stages[2]"]], lines
    assert "did you mean 'chain'" in lines[0] and "did you mean 'name'" in lines[6]
    assert info.value.line == 2 and len(info.value.errors) == 7
    again = pickle.loads(pickle.dumps(info.value))
    assert str(again) == str(info.value)


def test_conda_suggests_setup():
    """Issue 36: ``conda:`` (and module:, venv:) got no "did you mean 'setup'"."""
    for key in ("conda", "module", "venv"):
        with pytest.raises(SpecError, match="did you mean 'setup'"):
            parse_workflow(f"name: w\nstages:\n  - name: a\n    {key}: myenv\n    run: 'true'\n")


def test_the_cli_prints_every_problem_and_submits_nothing(tmp_path):
    wf = tmp_path / "several.yaml"
    wf.write_text(SEVERAL_PROBLEMS)
    res = subprocess.run([sys.executable, "-m", "asad", "submit", str(wf), "--backend", "sim"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 3 and "Traceback" not in res.stderr
    assert res.stderr.count(f"{wf}:") == 7 and "Nothing was submitted." in res.stderr, res.stderr
