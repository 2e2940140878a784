"""Liquid's resource estimation: runs CSV, random forests, the evaluation protocol."""

from __future__ import annotations

import json

import pytest

from optsched.errors import InputError
from optsched.estimation.forest import ResourceEstimator, evaluate, to_request, with_bandwidth
from optsched.estimation.runs import fnv1a_32, read_runs, synthetic_runs, write_runs

pytest.importorskip("sklearn")


def test_fnv1a_matches_the_reference_values():
    assert fnv1a_32("") == 0x811C9DC5
    assert fnv1a_32("a") == 0xE40C292C
    assert fnv1a_32("foobar") == 0xBF9CF968


def test_runs_csv_round_trip_and_string_features(tmp_path):
    runs = synthetic_runs(5, 1)
    path = tmp_path / "runs.csv"
    write_runs(path, runs)
    again = read_runs(path)
    assert [(r.job, r.job_type, r.role) for r in again] == [
        (r.job, r.job_type, r.role) for r in runs
    ]
    assert again[0].features == pytest.approx(runs[0].features)
    assert again[0].labels == pytest.approx(runs[0].labels)
    path.write_text("job_type,role,optimizer,gpu_mem\nvgg16,worker,adam,100\n")
    (row,) = read_runs(path)
    assert row.features == {"optimizer": float(fnv1a_32("adam")), "role": 0.0}
    path.write_text("job_type,role\nx,worker\n")
    with pytest.raises(InputError, match="no label column"):
        read_runs(path)
    path.write_text("job_type,role,gpu_mem\nx,boss,1\n")
    with pytest.raises(InputError, match="role must be"):
        read_runs(path)


@pytest.mark.slow  # 10 s of forests; test_estimate_cli runs the protocol through the CLI
def test_forest_learns_and_the_protocol_grows_the_training_set():
    """On the synthetic ground truth the forest explains most of GPU memory's variance and
    does not get worse with more training jobs."""
    runs = synthetic_runs(120, 2)
    scores = evaluate(runs, test_jobs=30, step=45, models=("forest", "linear"))
    forest = {s.train_jobs: s for s in scores if s.model == "forest" and s.label == "gpu_mem"}
    assert sorted(forest) == [45, 90]
    assert forest[90].r2 > 0.8 and forest[90].rmse <= forest[45].rmse * 1.1
    assert {s.model for s in scores} == {"forest", "linear"}
    with pytest.raises(InputError, match="test_jobs 50: the runs have 20 jobs"):
        evaluate(synthetic_runs(20, 0))


def test_predictions_become_requests_and_bandwidth_weights():
    runs = synthetic_runs(60, 3)
    est = ResourceEstimator("linear", seed=1).fit(runs)  # forests: test_estimate_cli
    (pred,) = est.predict([runs[0]])
    assert set(pred) == set(est.labels)
    assert to_request(
        {"cpu": 250, "mem": 1500, "gpu_util": 57.2, "gpu_mem": 3000, "bw_rx": 250_001}
    ) == {"cpus": 3.0, "memory": 2048, "gpu_util": 50, "gpu_memory": 3072, "bandwidth": 3.0}
    assert to_request({})["bandwidth"] == 1.0 and to_request({})["gpu_util"] == 100.0
    from tests.test_placement import spread_instance

    inst = with_bandwidth(spread_instance(), {"j0": 7.0})
    assert inst.jobs[0].bandwidth == 7.0
    with pytest.raises(InputError, match="unknown job"):
        with_bandwidth(inst, {"nope": 1.0})


def test_estimate_cli(tmp_path, capsys):
    from optsched.cli import main

    runs = tmp_path / "runs.csv"
    assert main(["estimate", "gen", "--jobs", "80", "--out", str(runs)]) == 0
    # linear models: 42 forests take 4 s whatever the data (test_cluster's forest-predicted
    # instances train them)
    assert (
        main(
            [
                "estimate",
                "eval",
                str(runs),
                "--test-jobs",
                "20",
                "--step",
                "60",
                "--model",
                "linear",
                "--json",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    rows = json.loads(out[out.index("[") :])
    assert {r["train_jobs"] for r in rows} == {60} and {r["model"] for r in rows} == {"linear"}
    assert main(["estimate", "predict", str(runs), "--query", str(runs), "--model", "linear"]) == 0
    assert main(["estimate", "eval"]) == 2
    assert main(["estimate", "gen"]) == 2
