"""``optsched estimate gen|eval|predict``: Liquid's resource estimation (random forests;
the estimation extra)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from optsched.cli.common import EXIT_OK, add_json, add_seed, print_json
from optsched.errors import InputError
from optsched.output import json_text, output_target


def add_parser(sub: Any) -> None:
    p = sub.add_parser("estimate", help="Liquid's resource estimation (random forests)")
    p.add_argument(
        "action",
        choices=("gen", "eval", "predict"),
        help="gen: synthetic runs CSV; eval: the paper's protocol (train-set "
        "growth, RMSE, R²); predict: train on RUNS, predict --query rows",
    )
    p.add_argument(
        "runs", nargs="?", metavar="RUNS.csv", help="eval, predict: the past runs to learn from"
    )
    p.add_argument("--query", metavar="RUNS.csv", help="predict: the rows to predict")
    p.add_argument(
        "--out",
        metavar="RUNS.csv",
        help="gen: where to write (atomically: a kill leaves the old file)",
    )
    p.add_argument(
        "--jobs", type=int, default=350, help="gen: number of jobs, 1 to 1,000,000 (default 350)"
    )
    p.add_argument(
        "--noise", type=float, default=0.1, help="gen: log-normal σ, 0 to 1 (default 0.1)"
    )
    add_seed(p, "synthetic runs and model training")
    p.add_argument(
        "--test-jobs", type=int, default=50, help="eval: jobs held out to test, >= 1 (default 50)"
    )
    p.add_argument(
        "--step", type=int, default=50, help="eval: training-set growth in jobs, >= 1 (default 50)"
    )
    p.add_argument(
        "--model",
        action="append",
        choices=("forest", "linear", "tree", "adaboost", "gbdt"),
        help="eval: models to compare (default all); predict: the model",
    )
    add_json(p, "eval's scores")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from optsched.estimation.forest import (
        MODELS,
        ResourceEstimator,
        evaluate,
        to_request,
    )
    from optsched.estimation.runs import (
        LABELS,
        SYNTHETIC_FEATURES,
        check_synthetic,
        iter_synthetic_runs,
        read_runs,
        write_runs,
    )

    if args.action == "gen":
        if args.runs is not None:
            raise InputError(
                f"estimate gen reads no runs CSV (got {args.runs!r}); it writes --out RUNS.csv"
            )
        if args.query is not None:
            raise InputError("--query is an option of estimate predict, not gen")
        if args.out is None:
            raise InputError("estimate gen needs --out RUNS.csv")
        check_synthetic(args.jobs, args.noise, jobs_name="--jobs", noise_name="--noise")
        target = output_target(args.out, "--out")  # before the work
        rows = write_runs(
            target,
            iter_synthetic_runs(args.jobs, args.seed, args.noise),
            features=SYNTHETIC_FEATURES,
            labels=LABELS,
        )
        print(f"wrote {args.out}: {args.jobs} synthetic jobs, {rows} containers")
        return EXIT_OK
    if args.out is not None:
        raise InputError(
            f"--out is an option of estimate gen; estimate {args.action} prints to stdout"
        )
    if not args.runs:
        raise InputError(f"estimate {args.action} needs a runs CSV")
    if args.action == "eval":
        if args.query is not None:
            raise InputError("--query is an option of estimate predict, not eval")
        scores = evaluate(
            read_runs(args.runs),
            test_jobs=args.test_jobs,
            step=args.step,
            models=args.model or MODELS,
            seed=args.seed,
            names={"test_jobs": "--test-jobs", "step": "--step"},
        )
        rows_out = [vars(s) for s in scores]
        if args.json:
            print_json(rows_out)
        else:
            print(f"{'model':<9} {'train':>5} {'label':<13} {'RMSE':>12} {'R²':>7}")
            for r in rows_out:
                print(
                    f"{r['model']:<9} {r['train_jobs']:>5} {r['label']:<13} "
                    f"{r['rmse']:>12.4g} {r['r2']:>7.3f}"
                )
        return EXIT_OK
    if not args.query:
        raise InputError("estimate predict needs --query RUNS.csv (rows to predict)")
    if args.model and len(args.model) > 1:
        raise InputError(
            f"estimate predict uses one --model, got {len(args.model)}: {', '.join(args.model)}"
        )
    runs = read_runs(args.runs)
    query = read_runs(args.query)
    estimator = ResourceEstimator((args.model or ["forest"])[0], args.seed).fit(runs)
    out = [
        {
            "job": q.job,
            "job_type": q.job_type,
            "role": q.role,
            "predicted": p,
            "request": to_request(p),
        }
        for q, p in zip(query, estimator.predict(query), strict=True)
    ]
    sys.stdout.write(json_text(out))  # valid JSON: refuses NaN and Infinity
    return EXIT_OK
