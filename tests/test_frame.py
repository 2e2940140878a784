"""Results and benchmark records load into a pandas DataFrame in one call."""

from __future__ import annotations

import numpy as np
import pytest

from optsched import solve
from optsched.bench.frame import flatten, to_frame
from optsched.errors import InputError
from optsched.io import load_instance
from tests.conftest import ROOT
from tests.test_online import TOY

pd = pytest.importorskip("pandas")


def test_results_become_rows():
    inst = load_instance(TOY)
    results = [
        solve(inst, method, mode=mode)
        for method in ("ect", "cpsat")
        for mode in ("relaxed", "gang")
    ]
    df = to_frame(results)
    assert len(df) == 4 and list(df["method"]) == ["ect", "ect", "cpsat", "cpsat"]
    assert list(df["objective"]) == [r.objective for r in results]
    assert "metrics.makespan" in df and "extra.bound_critical_path" in df
    assert df["extra.solver_status"].iloc[2] in ("OPTIMAL", "FEASIBLE")
    assert (
        df.groupby("method")["objective"].min()["cpsat"]
        <= df.groupby("method")["objective"].min()["ect"]
    )


def test_records_file_becomes_rows(tmp_path):
    path = ROOT / "benchmarks" / "results" / "hare" / "records.jsonl"
    df = to_frame(path)
    assert len(df) > 10 and {"method", "mode", "cell.jobs", "objective", "gap"} <= set(df)
    with pytest.raises(InputError, match="no such records file"):
        to_frame(tmp_path / "none.jsonl")


def test_flatten_makes_numpy_values_plain():
    row = flatten({"a": {"b": np.int64(2), "c": {"d": np.float32(0.5)}}, "l": [1, 2]})
    assert row == {"a.b": 2, "a.c.d": 0.5, "l": [1, 2]} and type(row["a.b"]) is int


def test_a_field_that_is_sometimes_a_mapping_gives_only_its_dotted_columns():
    df = to_frame([{"extra": {"guarantee": None}}, {"extra": {"guarantee": {"alpha": 2.0}}}])
    assert list(df.columns) == ["extra.guarantee.alpha"]
    assert df["extra.guarantee.alpha"].iloc[1] == 2.0


def test_with_manifests_the_gap_is_to_the_best_known_bound():
    """ECT's own bound is the critical path; against the best bound known for each instance
    (the sets' manifests and every record), as the reports take it, its gaps are smaller."""
    records = ROOT / "benchmarks" / "results" / "paper-scale" / "records.jsonl"
    sets = [ROOT / "instances" / s for s in ("hare-gpus", "hare-jobs")]
    df = to_frame(records, manifest=sets)
    ect = df[(df["method"] == "ect") & (df["mode"] == "relaxed") & df["gap_best"].notna()]
    assert len(ect) > 10 and (ect["gap_best"] >= 0).all()
    assert ect["gap_best"].median() < ect["gap"].median()
    row = ect.iloc[0]
    assert row["best.bound"] >= row["bound"]
    assert row["gap_best"] == pytest.approx(
        (row["objective"] - row["best.bound"]) / row["objective"]
    )
    assert "gap_best" not in to_frame(records)  # without manifests: the runs' own gaps only


def test_superseded_records_are_left_out_as_the_reports_leave_them():
    """A run recorded as an error and retried, and a plug-in method's older version: the
    frame keeps what the reports use unless asked for every row."""
    base = {"instance": "i", "mode": "relaxed", "objective": 5.0, "bound": 4.0}
    rows = [
        {**base, "key": "a", "method": "ect", "status": "error", "objective": None},
        {**base, "key": "a", "method": "ect", "status": "feasible"},
        {**base, "key": '["i","mine","relaxed",0,{},null,{"plugin":"v1"}]', "method": "mine",
         "status": "feasible"},
        {**base, "key": '["i","mine","relaxed",0,{},null,{"plugin":"v2"}]', "method": "mine",
         "status": "feasible", "objective": 4.5},
    ]  # fmt: skip
    df = to_frame(rows)
    assert len(df) == 2 and set(df["status"]) == {"feasible"}
    assert df.loc[df["method"] == "mine", "objective"].tolist() == [4.5]
    assert len(to_frame(rows, superseded=True)) == 4
