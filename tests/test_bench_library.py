"""The benchmark library: best known values with provenance, ``bench verify``, and the
documentation page generated from the committed manifests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optsched import load_instance, save_schedule, solve
from optsched.bench import Manifest, load_grid, verify
from optsched.bench.grid import generate_set
from optsched.bench.library import library_page
from optsched.bench.runner import plan, run_benchmark
from optsched.cli import main
from optsched.errors import InputError
from optsched.placement import load_placement_instance, place, save_placement
from optsched.schedule import Schedule, Task

ROOT = Path(__file__).resolve().parents[1]


def test_the_documentation_page_is_up_to_date():
    page = (ROOT / "docs" / "benchmark-library.md").read_text()
    assert page == library_page(ROOT / "instances"), "rerun python scripts/benchmark_library.py"


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """The tiny grid's set, with ECT recorded in relaxed mode."""
    folder = tmp_path / "set"
    manifest = generate_set(load_grid(ROOT / "benchmarks" / "grids" / "tiny.json"), folder)
    runs = plan(manifest, ["ect"], modes=["relaxed"])
    run_benchmark(
        runs, tmp_path / "r.jsonl", workers=1, manifest=manifest, progress=None, inline=True
    )
    return folder


def test_provenance_has_runtime_and_date(tiny):
    entry = next(iter(Manifest.of_set(tiny).instances.values()))
    by = entry["best"]["relaxed"]["objective_by"]
    assert by["method"] == "ect" and by["runtime_s"] >= 0 and by["finished_at"][:2] == "20"


def committed_values() -> dict[tuple[str, str], set[float]]:
    """(run key, objective or bound) → the values of the run records committed under
    benchmarks/results with that key."""
    values: dict[tuple[str, str], set[float]] = {}
    for path in (ROOT / "benchmarks" / "results").rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            if '"optsched/bench-record@1"' in line:
                record = json.loads(line)
                for what in ("objective", "bound"):
                    if record.get(what) is not None:
                        values.setdefault((record["key"], what), set()).add(record[what])
    return values


def test_every_committed_set_has_best_values_traced_to_committed_runs():
    values = committed_values()
    sets = sorted((ROOT / "instances").glob("*/manifest.json"))
    assert len(sets) >= 18
    for path in sets:
        for name, entry in Manifest.of_set(path.parent).instances.items():
            assert entry["best"], f"{path.parent.name}/{name}: no best value"
            for key, best in entry["best"].items():
                for what in ("objective", "bound"):
                    if best[what] is None:
                        continue
                    by = best[f"{what}_by"]
                    where = f"{path.parent.name}/{name} [{key}] {what}"
                    assert by["runtime_s"] >= 0 and by["finished_at"][:2] == "20", where
                    assert best[what] in values.get((by["key"], what), ()), (
                        f"{where}: no committed run {by['key']} with {best[what]}"
                    )


def test_verify_says_whether_a_schedule_improves_the_best_known(tiny, tmp_path):
    name = sorted(Manifest.of_set(tiny).instances)[-1]
    instance = load_instance(tiny / f"{name}.json")
    best = solve(instance, "cpsat", time_limit=10)
    save_schedule(tmp_path / "s.json", best.schedule)
    found = verify(tmp_path / "s.json", tiny)
    known = Manifest.of_set(tiny).instances[name]["best"]["relaxed"]["objective"]
    assert found.feasible and found.objective == best.objective and found.key == "relaxed"
    assert found.best_objective == known
    assert found.improves == (best.objective < known - 1e-6 * max(1.0, known))
    # the same schedule again, as the CLI prints it
    assert main(["bench", "verify", str(tmp_path / "s.json"), "--set", str(tiny), "--json"]) == 0
    # every task at time 0 on the first GPU: refused by the checker, exit 1
    stacked = Schedule(
        instance.name,
        [Task(t.job, t.round, t.task, t.gpu, 0.0) for t in best.schedule.tasks],
        "relaxed",
    )
    save_schedule(tmp_path / "bad.json", stacked)
    bad = verify(tmp_path / "bad.json", tiny)
    assert not bad.feasible and bad.objective is None and bad.violations > 0 and bad.first
    assert not bad.improves
    assert main(["bench", "verify", str(tmp_path / "bad.json"), "--set", str(tiny)]) == 1


def test_verify_compares_a_relaxed_schedule_with_gang_schedules_too(tiny, tmp_path):
    """A gang schedule is relaxed-feasible with the same objective: a relaxed schedule that
    beats the relaxed best known but not a better gang one does not improve the library."""
    name = sorted(Manifest.of_set(tiny).instances)[-1]
    instance = load_instance(tiny / f"{name}.json")
    ect = solve(instance, "ect")
    save_schedule(tmp_path / "s.json", ect.schedule)
    path = tiny / "manifest.json"
    data = json.loads(path.read_text())
    best = data["instances"][name]["best"]
    best["relaxed"]["objective"] = ect.objective + 1.0  # the relaxed best, beaten
    best["gang"] = {
        "objective": ect.objective - 1.0,
        "objective_by": {"method": "cpsat"},
        "bound": None,
    }
    path.write_text(json.dumps(data))
    found = verify(tmp_path / "s.json", tiny)
    assert found.best_objective == ect.objective - 1.0 and not found.improves
    assert found.best_objective_by == {"method": "cpsat"}


def test_verify_refuses_what_it_cannot_compare(tiny, tmp_path):
    name = sorted(Manifest.of_set(tiny).instances)[0]
    schedule = solve(load_instance(tiny / f"{name}.json"), "ect").schedule
    other = Schedule("not-in-the-set", schedule.tasks, schedule.mode)
    save_schedule(tmp_path / "other.json", other)
    with pytest.raises(InputError, match="'not-in-the-set' is not in the set"):
        verify(tmp_path / "other.json", tiny)
    save_schedule(tmp_path / "s.json", schedule)
    with pytest.raises(InputError, match="apply to placements"):
        verify(tmp_path / "s.json", tiny, {"cost": "code"})
    with pytest.raises(InputError, match=r"no manifest\.json"):
        verify(tmp_path / "s.json", tmp_path)


def test_verify_a_placement_under_its_cost_form(tmp_path):
    folder = ROOT / "instances" / "placement-k80"
    name = sorted(Manifest.of_set(folder).instances)[0]
    instance = load_placement_instance(folder / f"{name}.json")
    for params in ({}, {"cost": "code"}):
        result = place(instance, "bestfit", params=params)
        save_placement(tmp_path / "p.json", result.placement)
        found = verify(tmp_path / "p.json", folder, params)
        assert found.feasible and found.objective == pytest.approx(result.objective)
        assert found.key.startswith(f"placement[cost={params.get('cost', 'paper')}")
        assert found.best_bound is not None and found.objective >= found.best_bound - 1e-6
        assert found.gap is None and found.absolute_gap is not None
        assert json.loads(json.dumps(found.to_dict()))["instance"] == name
