"""Checking another simulator's job-level interval log (optsched.intervals)."""

from __future__ import annotations

import gzip

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched import check, simulate
from optsched.cli import main
from optsched.errors import InputError
from optsched.instance import GPU, Instance, Job
from optsched.intervals import Interval, check_intervals, read_gavel_log, read_interval_log
from optsched.testing import instances


def intervals_of(instance: Instance, schedule) -> list[Interval]:
    """A gang schedule as a job-level log: each round holds its GPUs for its slowest
    compute + sync."""
    rounds: dict[tuple[str, int], list] = {}
    for t in schedule.tasks:
        rounds.setdefault((t.job, t.round), []).append(t)
    gpu = {g.id: i for i, g in enumerate(instance.gpus)}
    out = []
    for (job, _), tasks in rounds.items():
        compute, sync = instance.row(instance.job_index[job])
        start = tasks[0].start
        pace = max(float(compute[gpu[t.gpu]] + sync[gpu[t.gpu]]) for t in tasks)
        out.append(Interval(job, tuple(t.gpu for t in tasks), start, start + pace))
    return out


@given(instances(mode="gang"), st.sampled_from(["fifo-perf", "srtf", "tiresias"]))
def test_a_gang_schedule_read_as_intervals_checks_with_the_same_metrics(inst, policy):
    result = simulate(inst, policy)
    report = check_intervals(result.simulation.instance, intervals_of(inst, result.schedule))
    assert report.feasible, report.violations
    assert report.objective == pytest.approx(result.objective, rel=1e-9)
    for key in ("mean_jct", "makespan", "max_rho", "p99_jct"):
        assert report.metrics[key] == pytest.approx(result.metrics[key], rel=1e-9), key
    assert report.metrics["utilisation"] == pytest.approx(result.metrics["utilisation"])


def small() -> Instance:
    jobs = (
        Job(id="a", rounds=2, tasks_per_round=2, compute={"V100": 1.0, "K80": 2.0}),
        Job(id="b", arrival=1.0, rounds=1, compute={"V100": 1.0}),
    )
    gpus = (GPU("v0", "V100"), GPU("v1", "V100"), GPU("k0", "K80"))
    return Instance("small", jobs, gpus, mode="gang")


def kinds(report) -> list[str]:
    return sorted(v.kind for v in report.violations)


def test_hand_made_logs_and_their_verdicts():
    inst = small()
    good = [
        Interval("a", ("v0", "v1"), 0.0, 2.0),  # two rounds at 1 s each
        Interval("b", ("v0",), 2.0, 3.0),
    ]
    ok = check_intervals(inst, good)
    assert ok.feasible and ok.completion == {"a": 2.0, "b": 3.0}
    assert ok.objective == pytest.approx(5.0) and ok.work == {"a": 2.0, "b": 1.0}
    # a on the K80 and a V100 runs at the K80's pace: 2 s a round
    mixed = check_intervals(
        inst, [Interval("a", ("v0", "k0"), 0, 4), Interval("b", ("v1",), 2, 3)]
    )
    assert mixed.feasible and mixed.completion["a"] == 4.0
    assert kinds(check_intervals(inst, [*good, Interval("b", ("v1",), 1.5, 2.5)])) == [
        "gpu-overlap",
        "job-overlap",
    ]
    assert kinds(check_intervals(inst, [good[0], Interval("b", ("v0",), 0.5, 1.5)])) == [
        "before-arrival",
        "gpu-overlap",
    ]
    assert "gpu-count" in kinds(check_intervals(inst, [Interval("a", ("v0",), 0, 2), good[1]]))
    assert "ineligible" in kinds(check_intervals(inst, [good[0], Interval("b", ("k0",), 2, 3)]))
    assert kinds(check_intervals(inst, [Interval("a", ("v0", "v1"), 0, 1.5), good[1]])) == [
        "incomplete"
    ]
    assert "unknown-job" in kinds(check_intervals(inst, [*good, Interval("z", ("v0",), 5, 6)]))
    assert "unknown-gpu" in kinds(check_intervals(inst, [*good, Interval("b", ("x",), 5, 6)]))
    assert "empty" in kinds(check_intervals(inst, [*good, Interval("b", ("v0",), 6, 6)]))
    # a simulator that rounds work: accepted within the tolerance
    short = [Interval("a", ("v0", "v1"), 0, 1.99), good[1]]
    assert not check_intervals(inst, short).feasible
    assert check_intervals(inst, short, tolerance=0.01).feasible


def test_the_csv_log_reads_and_refuses_bad_lines(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("job,gpus,start,end\na,v0;v1,0,2\nb,v0,2,3\n")
    assert read_interval_log(path) == [
        Interval("a", ("v0", "v1"), 0.0, 2.0),
        Interval("b", ("v0",), 2.0, 3.0),
    ]
    path.write_text("job,start,end\na,0,2\n")
    with pytest.raises(InputError, match="job,gpus,start,end"):
        read_interval_log(path)
    path.write_text("job,gpus,start,end\na,v0,zero,2\n")
    with pytest.raises(InputError, match=":2: start and end"):
        read_interval_log(path)
    path.write_text("job,gpus,start,end\na,,0,2\n")
    with pytest.raises(InputError, match="GPU list"):
        read_interval_log(path)


#: Lines as Gavel's scheduler writes them (tab-separated fields after the event).
GAVEL_LOG = "".join(
    f"scheduler:INFO [{time}] [{event}]\t{fields}\n"
    for time, event, fields in (
        ("0.0", "Job dispatched", "Job ID: 0"),
        ("0.0", "Micro-task scheduled", "Job ID: 0\tWorker type: v100\tWorker ID(s): 24, 25"),
        ("0.0", "Micro-task scheduled", "Job ID: 1\tWorker type: k80\tWorker ID(s): 3"),
        ("359.9", "Micro-task succeeded", "Job ID: 0\tWorker type: v100\tWorker ID(s): [24, 25]"),
        ("400.0", "Micro-task failed", "Job ID: 1"),
    )
)


def test_gavel_logs_become_intervals_on_optsched_names(tmp_path):
    """Worker ids are ranked within their type; a failed micro-task held its GPUs until it
    failed; gzipped logs read the same."""
    plain = tmp_path / "gavel.log"
    plain.write_text(GAVEL_LOG)
    zipped = tmp_path / "gavel.log.gz"
    zipped.write_bytes(gzip.compress(GAVEL_LOG.encode()))
    expected = [
        Interval("j0", ("V100-0", "V100-1"), 0.0, 359.9),
        Interval("j1", ("K80-0",), 0.0, 400.0),
    ]
    assert read_gavel_log(plain) == expected
    assert read_gavel_log(zipped) == expected
    plain.write_text(GAVEL_LOG.splitlines()[1] + "\n")
    with pytest.raises(InputError, match="never finished"):
        read_gavel_log(plain)
    plain.write_text("nothing here\n")
    with pytest.raises(InputError, match="no Gavel micro-task"):
        read_gavel_log(plain)


def test_check_reads_interval_logs_from_the_command_line(tmp_path, capsys):
    from optsched.io import save_instance

    inst = small()
    save_instance(tmp_path / "i.json", inst)
    log = tmp_path / "log.csv"
    log.write_text("job,gpus,start,end\na,v0;v1,0,2\nb,v0,2,3\n")
    assert main(["check", str(tmp_path / "i.json"), str(log)]) == 0
    assert "feasible (2 intervals); objective 5" in capsys.readouterr().out
    log.write_text("job,gpus,start,end\na,v0;v1,0,2\nb,v0,0.5,1.5\n")
    assert main(["check", str(tmp_path / "i.json"), str(log)]) == 1
    assert "before-arrival" in capsys.readouterr().out
    assert main(["check", str(tmp_path / "i.json"), str(log), "--tolerance", "2"]) == 2
    schedule = tmp_path / "s.json"
    schedule.write_text("{}")
    assert main(["check", str(tmp_path / "i.json"), str(schedule), "--tolerance", "0.1"]) == 2
    assert "--tolerance goes with an interval log" in capsys.readouterr().err


def test_the_checker_and_the_interval_checker_agree_on_an_optimum():
    """An exact solver's gang schedule, read as intervals, has the checker's objective."""
    from optsched import solve
    from optsched.generate import GeneratorSpec, generate

    inst = generate(GeneratorSpec(jobs=4, gpus=4, tasks=(1, 2), mode="gang"), seed=3)
    best = solve(inst, "ect")
    report = check_intervals(inst, intervals_of(inst, best.schedule))
    assert report.feasible
    assert report.objective == pytest.approx(check(inst, best.schedule).objective)


def test_overlaps_past_a_neighbour_and_gpus_held_after_the_end():
    """A long interval overlapping two later ones on one GPU: both overlaps reported; a GPU
    held after the last completion counts in utilisation only up to the makespan."""
    inst = Instance(
        "three",
        tuple(Job(id=n, rounds=1, compute={"V100": 1.0}) for n in "abc"),
        (GPU("g", "V100"), GPU("h", "V100")),
        mode="gang",
    )
    log = [
        Interval("a", ("g",), 0, 100),
        Interval("b", ("g",), 10, 20),
        Interval("c", ("g",), 30, 40),
    ]
    assert [v.job for v in check_intervals(inst, log).violations] == ["b", "c"]
    held = [
        Interval("a", ("g",), 0, 1e300),
        Interval("b", ("h",), 0, 1),
        Interval("c", ("h",), 1, 2),
    ]
    report = check_intervals(inst, held)
    assert report.feasible and report.metrics["makespan"] == 2.0
    assert report.metrics["utilisation"] == {"g": 1.0, "h": 1.0}


def test_the_csv_reader_takes_a_bom_and_spaces_and_refuses_other_shapes(tmp_path):
    path = tmp_path / "log.csv"
    path.write_bytes("\ufeffjob, gpus, start, end\na, v0 ; v1 , 0, 2\n".encode())
    assert read_interval_log(path) == [Interval("a", ("v0", "v1"), 0.0, 2.0)]
    path.write_text("job,gpus,start,end\na,v0,0,2,7\n")
    with pytest.raises(InputError, match="4 fields"):
        read_interval_log(path)
    path.write_bytes(b"job,gpus,start,end\na,v\xe90,0,2\n")
    with pytest.raises(InputError, match="not UTF-8"):
        read_interval_log(path)
