"""The ``optsched`` command line (docs/cli.md).

Exit codes, as ``diff`` and ``cmp`` use them: 0 success (feasible; a schedule was produced),
1 a negative answer (violations; no solution), 2 bad input, 70 internal error (one line;
``--debug`` shows the traceback), 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import fields
from importlib import resources
from pathlib import Path
from typing import Any

from optsched import __version__
from optsched.bench.grid import FAMILIES
from optsched.check import check
from optsched.errors import InputError
from optsched.exact.bounds import critical_path_bound
from optsched.io import (
    instance_from_dict,
    instance_to_dict,
    load_instance,
    load_schedule,
    read_json,
    save_schedule,
    schedule_from_dict,
    write_json,
)
from optsched.limits import MAX_SEED, check_seed
from optsched.output import distinct_targets, json_text, output_target, write_outputs
from optsched.placement.model import INSTANCE_FORMAT as PLACEMENT_INSTANCE_FORMAT
from optsched.result import OBJECTIVE_NAME, Result
from optsched.solve import KINDS, check_time_limit, load_plugin, methods, solve
from optsched.workloads import default_catalog

EXIT_OK, EXIT_NEGATIVE, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 70, 130


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # usage errors: one line, exit 2
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _seed(text: str) -> int:
    """argparse type of every ``--seed``: an integer in [0, MAX_SEED]."""
    try:
        return check_seed(int(text), "--seed")
    except (ValueError, InputError):
        raise argparse.ArgumentTypeError(f"must be an integer in [0, {MAX_SEED}], "
                                         f"got {text!r}") from None


def _print_json(obj: Any) -> None:
    sys.stdout.write(json_text(obj))


def _fmt(value: float | None, digits: int = 6) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


# -- commands ----------------------------------------------------------------------------------

def cmd_check(args: argparse.Namespace) -> int:
    data = read_json(args.instance)
    if isinstance(data, dict) and data.get("format") == PLACEMENT_INSTANCE_FORMAT:
        return _check_placement(args, data)
    instance = load_instance(args.instance)
    schedule = load_schedule(args.schedule)
    report = check(instance, schedule)
    if args.json:
        _print_json(report.to_dict())
    else:
        _print_verdict(report.violations, f"({report.mode} mode); objective "
                                          f"{_fmt(report.objective)}")
    return EXIT_OK if report.feasible else EXIT_NEGATIVE


def _print_verdict(violations: Sequence[Any], tail: str) -> None:
    for v in violations:
        print(f"{v.kind}: {v.message}")
    print(f"{'feasible' if not violations else f'{len(violations)} violation(s)'} {tail}")


def _check_placement(args: argparse.Namespace, data: Any) -> int:
    from optsched.placement.check import check_placement
    from optsched.placement.cost import CostModel
    from optsched.placement.model import placement_from_dict, placement_instance_from_dict

    instance = _in_file(args.instance, placement_instance_from_dict, data)
    placement = _in_file(args.schedule, placement_from_dict, read_json(args.schedule))
    report = check_placement(instance, placement)
    code = check_placement(instance, placement, CostModel("code")).cost
    cost = None if report.cost is None else report.cost.total
    forms = {model.objective_name: None if c is None else {
        "total": c.total, "network": c.network, "load": c.load}
        for model, c in ((CostModel("paper"), report.cost), (CostModel("code"), code))}
    if args.json:
        _print_json({"feasible": report.feasible, "cost": cost, "costs": forms, "violations": [
            {"kind": v.kind, "job": v.job, "container": v.container, "host": v.host,
             "message": v.message} for v in report.violations]})
    else:
        _print_verdict(report.violations, f"(placement); cost {_fmt(cost)} (paper form, "
                                          f"λ = 0.5); {_fmt(None if code is None else code.total)}"
                                          " (code form, reconstructed)")
    return EXIT_OK if report.feasible else EXIT_NEGATIVE


def cmd_place(args: argparse.Namespace) -> int:
    from optsched.placement.model import placement_instance_from_dict, placement_to_dict
    from optsched.placement.place import place

    if args.out is not None:
        output_target(args.out, inputs=[args.instance])
    instance = _in_file(args.instance, placement_instance_from_dict, read_json(args.instance))
    result, placement = place(instance, args.method, seed=args.seed,
                              time_limit=args.time_limit, params=_parse_params(args.param))
    if args.out is not None and placement is not None:
        write_json(args.out, placement_to_dict(placement))
    if args.json:
        _print_json(result.to_dict())
    else:
        _print_result(result)
    return EXIT_OK if placement is not None else EXIT_NEGATIVE


def _in_file(path: str, read: Any, data: Any) -> Any:
    """``read(data)``, an error naming the file ``path`` it came from."""
    try:
        return read(data)
    except InputError as exc:
        raise type(exc)(f"{path}: {exc}") from None


def _parse_params(pairs: Sequence[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"--param expects KEY=VALUE, got {pair!r}")
        if key in params:
            raise InputError(f"--param {key} given twice ({params[key]!r} and {value!r})")
        params[key] = value
    return params


def _print_result(result: Result, online: bool = False) -> None:
    """The result as aligned lines. Online (``simulate``): the JCT metrics instead of a gap,
    which to a critical path says little about an online policy."""
    print(f"method     {result.method} ({result.mode} mode)")
    print(f"status     {result.status}")
    name = "Σ w_j C_j" if result.objective_name == OBJECTIVE_NAME else result.objective_name
    print(f"objective  {_fmt(result.objective)}  ({name})")
    metrics = result.metrics or {}
    if online:
        for key, label in (("total_weighted_jct", "wJCT"), ("mean_jct", "mean JCT"),
                           ("makespan", "makespan")):
            if key in metrics:
                print(f"{label:<10} {_fmt(metrics[key])}")
        if result.bound is not None:
            print(f"floor      {_fmt(result.bound)}  (critical path: every job alone on "
                  "the fastest GPUs)")
    else:
        source = {"method": "the method's certified bound",
                  "critical_path": "critical path"}.get(result.extra.get("bound_source", ""))
        print(f"bound      {_fmt(result.bound)}" + (f"  ({source})" if source else ""))
        if result.mode == "placement":  # a cost can be negative: no ratio
            print(f"gap        {_fmt(result.absolute_gap)}  (cost − bound)")
        else:
            gap = result.gap
            print(f"gap        {'-' if gap is None else f'{100 * gap:.2f} %'}")
    print(f"runtime    {result.runtime_s:.3f} s")
    limit = result.extra.get("time_limit")
    if limit is not None:
        print(f"limit      {limit:g} s")
    if result.extra.get("interrupted"):
        print("interrupted  yes (Ctrl-C): the best schedule found before it")


def cmd_solve(args: argparse.Namespace) -> int:
    if args.export is not None and any(p.startswith("export=") for p in args.param):
        raise InputError("give the model file once: --export or --param export=...")
    for option, path in (("--out", args.out), ("--export", args.export)):
        if path is not None:
            output_target(path, option, inputs=[args.instance, args.hint])
    distinct_targets([("--out", args.out), ("--export", args.export)])
    instance = load_instance(args.instance)
    hint = load_schedule(args.hint) if args.hint else None
    params = _parse_params(args.param)
    if args.export:
        params["export"] = args.export
    result = solve(instance, args.method, mode=args.mode, time_limit=args.time_limit,
                   seed=args.seed, params=params, hint=hint,
                   progress=None if args.quiet else sys.stderr)
    if args.out is not None and result.schedule is not None:
        save_schedule(args.out, result.schedule)
    if args.json:
        _print_json(result.to_dict())
    else:
        _print_result(result)
    return EXIT_OK if result.schedule is not None else EXIT_NEGATIVE


def cmd_simulate(args: argparse.Namespace) -> int:
    from optsched.online.run import run_policy

    params = _parse_params(args.param)
    if args.instance.endswith(".json") and args.cluster:
        raise InputError("--cluster goes with a trace; an instance (.json) has its own GPUs")
    targets = [("--out", args.out), ("--realised", args.realised), ("--cdf", args.cdf)]
    for option, path in targets:
        if path is not None:  # the replay policy's schedule is an input too
            output_target(path, option, inputs=[args.instance, params.get("schedule")])
    distinct_targets(targets)
    if args.cdf is not None:
        from optsched.plot import image_format, jct_cdf_image

        cdf_format = image_format(args.cdf, "--cdf")

    if args.instance.endswith(".json"):
        instance = load_instance(args.instance)
    else:
        from optsched.traces import TraceMapping, parse_cluster, read_trace, trace_instance

        if not args.cluster:
            raise InputError("a trace needs --cluster TYPE:COUNT,... (e.g. V100:85,T4:43)")
        trace = read_trace(args.instance, args.trace_format)
        mapping = TraceMapping(quantum=args.quantum, reference_type=args.reference_type,
                               seed=args.seed)
        instance = trace_instance(trace, parse_cluster(args.cluster), mapping,
                                  mode=args.mode or "relaxed")
    if args.mode:
        instance = instance.with_mode(args.mode)
    result, sim = run_policy(
        instance, args.policy, params=params, seed=args.seed,
        noise=args.noise, switch_cost=args.switch_cost, tick=args.tick,
        event_driven=not args.heartbeat, record=not args.no_record, progress=args.progress,
        stream_to=args.out if args.no_record else None)
    outputs: list[tuple[str, str | bytes]] = []
    if args.out is not None and result.schedule is not None:
        outputs.append((args.out, json_text(result.schedule.to_dict())))
    if args.realised is not None:
        outputs.append((args.realised, json_text(instance_to_dict(sim.instance))))
    if args.cdf is not None:
        arrival = [job.arrival for job in sim.instance.jobs]
        jct = [c - a for c, a in zip(sim.completion, arrival, strict=True)]
        outputs.append((args.cdf, jct_cdf_image({args.policy: jct}, cdf_format,
                                                title=f"{sim.instance.name}: JCT CDF")))
    write_outputs(outputs)  # all or nothing, after the work succeeded
    if not args.instance.endswith(".json") and trace.skipped:
        print(f"trace {trace.name}: {len(trace.jobs)} jobs, {trace.skipped} skipped "
              f"(first: {trace.first_skip})", file=sys.stderr)
    if args.json:
        _print_json(result.to_dict())
    else:
        _print_result(result, online=True)
        print("checked    " + ("yes: objective and metrics from the checker" if
                               result.extra["checked"] else "no (--no-record): the "
                               "simulator's own numbers" + (
                                   f"; optsched check the schedule in {args.out}"
                                   if args.out else "")))
        print(f"{sim.events} events in {sim.runtime_s:.2f} s ({sim.events_per_s:,.0f} events/s)")
    return EXIT_OK


def cmd_estimate(args: argparse.Namespace) -> int:
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
            raise InputError(f"estimate gen reads no runs CSV (got {args.runs!r}); it writes "
                             "--out RUNS.csv")
        if args.query is not None:
            raise InputError("--query is an option of estimate predict, not gen")
        if args.out is None:
            raise InputError("estimate gen needs --out RUNS.csv")
        check_synthetic(args.jobs, args.noise, jobs_name="--jobs", noise_name="--noise")
        target = output_target(args.out, "--out")  # before the work
        rows = write_runs(target, iter_synthetic_runs(args.jobs, args.seed, args.noise),
                          features=SYNTHETIC_FEATURES, labels=LABELS)
        print(f"wrote {args.out}: {args.jobs} synthetic jobs, {rows} containers")
        return EXIT_OK
    if args.out is not None:
        raise InputError(f"--out is an option of estimate gen; estimate {args.action} prints "
                         "to stdout")
    if not args.runs:
        raise InputError(f"estimate {args.action} needs a runs CSV")
    if args.action == "eval":
        if args.query is not None:
            raise InputError("--query is an option of estimate predict, not eval")
        if args.test_jobs < 1:
            raise InputError(f"--test-jobs must be >= 1, got {args.test_jobs}")
        if args.step < 1:
            raise InputError(f"--step must be >= 1, got {args.step}")
        runs = read_runs(args.runs)
        jobs = len({r.job for r in runs})
        if args.test_jobs >= jobs:
            raise InputError(f"--test-jobs {args.test_jobs}: {args.runs} has {jobs} jobs, so "
                             "none would be left to train on")
        if args.step > jobs - args.test_jobs:
            raise InputError(f"--step {args.step} exceeds the {jobs - args.test_jobs} training "
                             f"jobs ({args.runs} has {jobs} jobs, --test-jobs {args.test_jobs})"
                             ": nothing would be evaluated")
        scores = evaluate(runs, test_jobs=args.test_jobs, step=args.step,
                          models=args.model or MODELS, seed=args.seed)
        rows_out = [vars(s) for s in scores]
        if args.json:
            _print_json(rows_out)
        else:
            print(f"{'model':<9} {'train':>5} {'label':<13} {'RMSE':>12} {'R²':>7}")
            for r in rows_out:
                print(f"{r['model']:<9} {r['train_jobs']:>5} {r['label']:<13} "
                      f"{r['rmse']:>12.4g} {r['r2']:>7.3f}")
        return EXIT_OK
    if not args.query:
        raise InputError("estimate predict needs --query RUNS.csv (rows to predict)")
    if args.model and len(args.model) > 1:
        raise InputError(f"estimate predict uses one --model, got {len(args.model)}: "
                         f"{', '.join(args.model)}")
    runs = read_runs(args.runs)
    query = read_runs(args.query)
    estimator = ResourceEstimator((args.model or ["forest"])[0], args.seed).fit(runs)
    out = [{"job": q.job, "job_type": q.job_type, "role": q.role, "predicted": p,
            "request": to_request(p)} for q, p in zip(query, estimator.predict(query),
                                                      strict=True)]
    sys.stdout.write(json_text(out))  # valid JSON: refuses NaN and Infinity
    return EXIT_OK


def cmd_methods(args: argparse.Namespace) -> int:
    infos = methods()
    if args.json:
        _print_json([{"kind": i.kind, "name": i.name, "modes": sorted(i.modes),
                      "description": i.description, "params": dict(i.params),
                      "default_time_limit": i.default_time_limit} for i in infos])
        return EXIT_OK
    for kind in KINDS:
        group = [i for i in infos if i.kind == kind]
        print(f"{kind}:")
        if not group:
            print("  (none yet)")
        for i in group:
            modes = "/".join(sorted(i.modes)) if kind != "place" else "placement"
            limit = "" if i.default_time_limit is None else \
                f" (default time limit {i.default_time_limit:g} s)"
            print(f"  {i.name:<16} {i.description} [{modes}]{limit}")
            for key, text in i.params.items():
                print(f"  {'':<16}   --param {key}=…  {text}")
    return EXIT_OK


def cmd_gen(args: argparse.Namespace) -> int:
    from optsched.placement.model import placement_instance_to_dict

    if args.out is not None:
        output_target(args.out)
    if args.name is not None and (not args.name or not args.name.isprintable()):
        raise InputError(f"--name must be a non-empty printable name, got {args.name!r}")
    spec_type, make = FAMILIES[args.family]
    given = {f.name for spec, _ in FAMILIES.values() for f in fields(spec)
             if getattr(args, f.name, None) is not None}
    own = {f.name for f in fields(spec_type)}
    if given - own:
        option = "--" + sorted(given - own)[0].replace("_", "-")
        raise InputError(f"{option} is not an option of the {args.family} family")
    values = {name: getattr(args, name) for name in given}
    if args.family != "exact" and "weight" in values:
        values["weight"] = tuple(int(w) for w in values["weight"])
    if "mix" in values and args.family == "liquid":
        try:
            values["mix"] = tuple((m, int(c)) for m, c in (
                part.split(":") for part in values["mix"].split(",")))
        except ValueError:
            raise InputError(f"--mix expects MODEL:COUNT,..., got {args.mix!r}") from None
    elif "mix" in values:
        try:
            values["mix"] = tuple(float(x) for x in values["mix"].split(","))
        except ValueError:
            raise InputError(f"--mix expects 4 comma-separated ratios, got {args.mix!r}") from None
    instance = make(spec_type(**values), args.seed, name=args.name)
    if args.family == "placement":
        data = placement_instance_to_dict(instance)
        summary = (f"{len(instance.jobs)} jobs, "
                   f"{sum(len(j.containers) for j in instance.jobs)} containers, "
                   f"{len(instance.topology.hosts)} hosts")
    else:
        data = instance_to_dict(instance)
        summary = f"{instance.n_jobs} jobs, {instance.n_tasks} tasks, {instance.n_gpus} GPUs"
    if args.out is not None:
        write_json(args.out, data)
        print(f"wrote {args.out}: {summary}")
    else:
        _print_json(data)
    return EXIT_OK


def cmd_plot(args: argparse.Namespace) -> int:
    from optsched.plot import gantt_image, image_format

    output_target(args.out, inputs=[args.instance, args.schedule])
    fmt = image_format(args.out)
    instance = load_instance(args.instance)
    schedule = load_schedule(args.schedule)
    write_outputs([(args.out, gantt_image(instance, schedule, fmt))])
    print(f"wrote {args.out} ({fmt.upper()})")
    return EXIT_OK


def cmd_workloads(args: argparse.Namespace) -> int:
    catalog = default_catalog()
    if args.json:
        _print_json(catalog.to_dict())
        return EXIT_OK
    for w in catalog.workloads.values():
        cells = ", ".join(f"{t} {c.seconds:.4g}s ({c.provenance})" for t, c in w.cells.items())
        print(f"{w.name}: {cells}")
    return EXIT_OK


def _bundled(name: str) -> Any:
    text = resources.files("optsched").joinpath("data", "instances", name).read_text("utf-8")
    return json.loads(text)


def cmd_demo(args: argparse.Namespace) -> int:
    instance = instance_from_dict(_bundled("hare-toy.instance.json"))
    paper = check(instance, schedule_from_dict(_bundled("hare-fig1.schedule.json")))
    print(f"Instance {instance.name!r}: Hare's motivating example (HPDC'22, Fig. 1): "
          f"{instance.n_jobs} jobs, {instance.n_tasks} tasks, {instance.n_gpus} GPUs of "
          f"{len({g.type for g in instance.gpus})} types.\n")
    Row = tuple[str, str, str, float | None, float | None, Any]
    rows: list[Row] = [("paper's schedule (Fig. 1)", "relaxed",
                        "checked" if paper.feasible else "INFEASIBLE", paper.objective,
                        critical_path_bound(instance), paper.metrics)]
    methods = (("ect", "ect (list scheduling)", ("relaxed", "gang")),
               ("hare", "hare (Algorithm 1)", ("relaxed",)),
               ("hare-ect", "hare-ect (variant)", ("relaxed",)),
               ("cpsat", "cpsat (exact CP-SAT)", ("relaxed", "gang")))
    guarantee = None
    for method, label, modes in methods:
        for mode in modes:
            r = solve(instance, method, mode=mode, seed=args.seed)
            rows.append((label, mode, str(r.status), r.objective, r.bound, r.metrics))
            if method == "hare":
                guarantee = (r.extra["guarantee"], r.extra["relaxation"])
    header = f"{'schedule':<27} {'mode':<8} {'status':<9} {'Σ w·C':>7} {'bound':>7} " \
             f"{'gap':>7} {'makespan':>9}"
    print(header)
    print("-" * len(header))
    for name, mode, status, obj, bound, metrics in rows:
        gap = None if obj is None or bound is None else (obj - bound) / obj
        print(f"{name:<27} {mode:<8} {status:<9} {_fmt(obj):>7} {_fmt(bound):>7} "
              f"{'-' if gap is None else f'{100 * gap:.1f}%':>7} "
              f"{_fmt(metrics['makespan'] if metrics else None):>9}")
    if guarantee is not None and guarantee[0] is not None:
        g, rl = guarantee
        proved = "proved" if rl["proved"] else "unproved"
        print(f"\nhare: Σ w·C ≤ α(2+α) × relaxation = {_fmt(g['factor'])} × "
              f"{_fmt(rl['objective'])} (α = {_fmt(g['alpha'])}, relaxation {proved}); "
              f"achieved ratio {g['ratio']:.2f}.")
    print("\nbound = certified lower bound (critical path, or the solver's proof); gap = "
          "(Σ w·C − bound) / Σ w·C.\nTry: optsched solve INSTANCE --method cpsat --json; "
          "optsched check INSTANCE SCHEDULE.\n")
    _demo_liquid(args.seed)
    return EXIT_OK if paper.feasible else EXIT_INTERNAL


def _demo_liquid(seed: int) -> None:
    """Liquid's scheduler on the bundled cluster instance, a few switches, all checked."""
    from optsched.online.run import run_policy

    instance = instance_from_dict(_bundled("liquid-demo.instance.json"))
    distributed = sum(j.tasks_per_round > 1 for j in instance.jobs)
    print(f"Instance {instance.name!r}: Liquid's setting (TPDS'22): {instance.n_jobs} jobs "
          f"({distributed} of 1 PS + 2 workers) arriving over time on {instance.n_gpus} T4 of "
          f"{len({g.host for g in instance.gpus})} hosts; launch/save phases, placement-"
          "dependent times, GPU sharing cap 1.3.\n")
    configs = (("immediate best-fit", {"cost": "code"}),
               ("batch GGA (every 5 s)", {"placement": "gga", "batch": "5", "cost": "code"}),
               ("random placement", {"placement": "random"}),
               ("spread placement", {"placement": "spread"}),
               ("best-fit + sharing + pre-scheduling",
                {"cost": "code", "share": "1", "preschedule": "1"}),
               ("best-fit, heartbeat-only (5 s)", {"cost": "code", "heartbeat": "5"}))
    header = f"{'liquid policy':<38} {'mean JCT':>9} {'makespan':>9} {'GPU idle':>9}"
    print(header)
    print("-" * len(header))
    for name, params in configs:
        result, sim = run_policy(instance, "liquid", params=params, seed=seed)
        metrics = result.metrics or {}
        print(f"{name:<38} {metrics['mean_jct']:>9.0f} {metrics['makespan']:>9.0f} "
              f"{sim.metrics['gpu_idle_s']:>9.0f}")
    print("\nTimes in seconds; GPU idle = GPU-seconds without training within the makespan.\n"
          "Try: optsched simulate INSTANCE --policy liquid --param share=1 --out S.json; "
          "optsched plot INSTANCE S.json --out gantt.png.")


def cmd_bench_gen(args: argparse.Namespace) -> int:
    from optsched.bench.grid import generate_set, load_grid

    try:
        manifest = generate_set(load_grid(args.grid), args.out)
    except KeyboardInterrupt:  # generate_set has removed its partial output
        print("optsched: interrupted: nothing written", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"wrote {len(manifest.instances)} instances and manifest.json to {args.out}")
    return EXIT_OK


def cmd_bench_run(args: argparse.Namespace) -> int:
    """Exit 0: every run recorded without error; 1: some runs recorded as errors; 2: bad
    input (nothing run); 128 + signal (130 SIGINT, 143 SIGTERM): stopped, finished runs
    recorded, rerun the same command to resume."""
    from optsched.bench.manifest import Manifest
    from optsched.bench.records import check_records_path
    from optsched.bench.runner import (
        RunInterrupted,
        check_scheduler,
        check_workers,
        plan,
        run_benchmark,
    )

    check_workers(args.workers)
    check_time_limit(args.time_limit)
    check_scheduler(args.scheduler)
    check_records_path(args.records)
    folder = Path(args.instances)
    if not folder.is_dir():
        raise InputError(f"{args.instances}: not a folder (an instance set written by "
                         "optsched bench gen)")
    if not (folder / "manifest.json").is_file():
        raise InputError(f"{args.instances}: no manifest.json (not an instance set written "
                         "by optsched bench gen)")
    try:
        manifest = Manifest.load(folder / "manifest.json")
        check_records_path(args.records, inputs=[manifest.path, *(
            folder / e["file"] for e in manifest.instances.values())])
        runs = plan(manifest, args.method, modes=args.mode, seeds=args.seeds or [0],
                    params=_parse_params(args.param), time_limit=args.time_limit,
                    plugins=args.plugin)
        if args.only:
            runs = [run for run in runs if fnmatch.fnmatchcase(run.instance, args.only)]
            if not runs:
                raise InputError(f"--only {args.only!r} matches no instance of "
                                 f"{args.instances}")
        summary = run_benchmark(runs, args.records, workers=args.workers,
                                scheduler=args.scheduler, manifest=manifest)
    except RunInterrupted as stop:
        done = stop.summary
        print(f"{done.finished} runs finished ({done.errors} errors), {done.skipped} already "
              f"recorded, {done.remaining} not run; records in {args.records}")
        print(f"optsched: interrupted by {stop.signal_name}: {done.finished} runs finished "
              f"and recorded, {done.remaining} not run; rerun the same command to resume",
              file=sys.stderr)
        return stop.exit_code
    except KeyboardInterrupt:
        print("optsched: interrupted before any run started", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"{summary.finished} runs finished ({summary.errors} errors), {summary.skipped} "
          f"already recorded, in {summary.elapsed_s:.1f} s; records in {args.records}")
    return EXIT_NEGATIVE if summary.errors else EXIT_OK


def cmd_bench_report(args: argparse.Namespace) -> int:
    from optsched.bench.manifest import Manifest
    from optsched.bench.records import load_records
    from optsched.bench.report import FORMATS, write_report

    records = [r for path in args.records for r in load_records(path, must_exist=True)]
    manifests = [Manifest.load(Path(m) / "manifest.json" if Path(m).is_dir() else m)
                 for m in args.manifest or ()]
    written = write_report(records, args.out, formats=args.format or FORMATS,
                           plots=not args.no_plots, inputs=args.records, manifests=manifests)
    print("wrote " + ", ".join(str(p) for p in written))
    return EXIT_OK


# -- parser ------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="optsched", description="Scheduling DL training jobs on "
                     "heterogeneous GPU clusters: exact methods, heuristics, checker.")
    parser.add_argument("--version", action="version", version=f"optsched {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE|FILE.py",
                        help="import a module (from the current directory too) or a Python "
                             "file first, so the methods it registers can be used; "
                             "repeatable")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("check", help="check a schedule (or a placement) against an instance")
    p.add_argument("instance", help="an instance or a placement instance")
    p.add_argument("schedule", help="a schedule, or a placement for a placement instance")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("solve", help="solve an instance with a registered method")
    p.add_argument("instance")
    p.add_argument("--method", required=True)
    p.add_argument("--mode", choices=("relaxed", "gang"))
    p.add_argument("--time-limit", type=float, metavar="S",
                   help="seconds (default: the method's, see `optsched methods`; none for "
                        "heuristics)")
    p.add_argument("--seed", type=_seed, default=0)
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--hint", metavar="SCHEDULE")
    p.add_argument("--quiet", action="store_true",
                   help="no progress lines on stderr (a run longer than 5 s prints one "
                        "every 5 s: elapsed, incumbent, bound, gap)")
    p.add_argument("--out", metavar="SCHEDULE", help="write the schedule here")
    p.add_argument("--export", metavar="MODEL.lp|.mps",
                   help="write the MILP model (milp-* methods; same as --param export=...)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("simulate", help="run an online policy in the event-driven simulator")
    p.add_argument("instance", metavar="INSTANCE_OR_TRACE",
                   help="an instance (.json) or a Gavel/Tiresias/Philly trace")
    p.add_argument("--cluster", metavar="TYPE:COUNT,...", help="the cluster a trace runs on")
    p.add_argument("--trace-format", choices=("auto", "gavel", "tiresias", "philly"),
                   default="auto")
    p.add_argument("--quantum", type=float, default=3600.0, metavar="S",
                   help="seconds of work per task on the reference type (traces; default 3600)")
    p.add_argument("--reference-type", default="K80",
                   help="GPU type a trace's durations and steps refer to (default K80)")
    p.add_argument("--policy", required=True, help="a simulate method (optsched methods)")
    p.add_argument("--mode", choices=("relaxed", "gang"))
    p.add_argument("--seed", type=_seed, default=0,
                   help="seed of the noise and of a trace's workload draw (default 0)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--noise", type=float, default=0.0,
                   help="task times × U[1-x, 1+x], drawn once per (job, GPU type)")
    p.add_argument("--switch-cost", type=float, default=0.0,
                   help="task-switch cost as a fraction of each task (Hare: < 0.05)")
    p.add_argument("--tick", type=float, metavar="S", help="periodic scheduling ticks")
    p.add_argument("--heartbeat", action="store_true",
                   help="decide only at ticks (default: at every event)")
    p.add_argument("--no-record", action="store_true",
                   help="do not keep the schedule (large traces; metrics are streamed, not "
                        "checked; with --out the schedule is written as it is made)")
    p.add_argument("--progress", action="store_true", help="progress on stderr")
    p.add_argument("--out", metavar="SCHEDULE", help="write the schedule here")
    p.add_argument("--cdf", metavar="PNG", help="plot the JCT CDF (needs matplotlib)")
    p.add_argument("--realised", metavar="INSTANCE",
                   help="write the realised instance (with noise) the schedule is checked on")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("place", help="place a placement instance's containers on hosts")
    p.add_argument("instance", metavar="PLACEMENT_INSTANCE")
    p.add_argument("--method", required=True, help="a place method (optsched methods)")
    p.add_argument("--seed", type=_seed, default=0)
    p.add_argument("--time-limit", type=float, metavar="S")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--out", metavar="PLACEMENT", help="write the placement here")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_place)

    p = sub.add_parser("estimate", help="Liquid's resource estimation (random forests)")
    p.add_argument("action", choices=("gen", "eval", "predict"),
                   help="gen: synthetic runs CSV; eval: the paper's protocol (train-set "
                        "growth, RMSE, R²); predict: train on RUNS, predict --query rows")
    p.add_argument("runs", nargs="?", metavar="RUNS.csv")
    p.add_argument("--query", metavar="RUNS.csv")
    p.add_argument("--out", metavar="RUNS.csv",
                   help="gen: where to write (atomically: a kill leaves the old file)")
    p.add_argument("--jobs", type=int, default=350,
                   help="gen: number of jobs, 1 to 1,000,000 (default 350)")
    p.add_argument("--noise", type=float, default=0.1,
                   help="gen: log-normal σ, 0 to 1 (default 0.1)")
    p.add_argument("--seed", type=_seed, default=0)
    p.add_argument("--test-jobs", type=int, default=50,
                   help="eval: jobs held out to test, >= 1 (default 50)")
    p.add_argument("--step", type=int, default=50,
                   help="eval: training-set growth in jobs, >= 1 (default 50)")
    p.add_argument("--model", action="append",
                   choices=("forest", "linear", "tree", "adaboost", "gbdt"),
                   help="eval: models to compare (default all); predict: the model")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_estimate)

    p = sub.add_parser("methods", help="list the registered methods")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_methods)

    p = sub.add_parser("gen", help="generate a random instance")
    p.add_argument("--seed", type=_seed, required=True)
    p.add_argument("--family", choices=tuple(FAMILIES),
                   default="exact",
                   help="exact: the exact-solver family (default); hare: the Hare paper's "
                        "simulation setting (160 GPUs, 300 jobs, ~50,000 tasks); placement: "
                        "a Liquid placement instance (PS + workers on hosts); liquid: "
                        "Liquid's jobs with phases, sharing and placement-dependent times "
                        "(instance@2, gang mode)")
    for name, typ in (("gpus-per-host", int), ("hosts-per-rack", int),
                      ("racks-per-domain", int), ("busy", float)):
        p.add_argument(f"--{name}", type=typ, dest=name.replace("-", "_"),
                       help="placement and liquid families")
    p.add_argument("--gpu-type", help="placement and liquid families (default K80 / T4)")
    for name in ("distributed", "interarrival", "share-cap", "launch", "save"):
        p.add_argument(f"--{name}", type=float, dest=name.replace("-", "_"),
                       help="liquid family only")
    p.add_argument("--predict-from", type=int, dest="predict_from", metavar="N",
                   help="liquid family: utilisation, GPU memory and bandwidth predicted by a "
                        "random forest trained on N synthetic past jobs (estimation extra)")
    p.add_argument("--prediction-error", type=float, dest="prediction_error", metavar="E",
                   help="liquid family: actual utilisation, GPU memory and bandwidth drawn "
                        "around the predictions with relative error N(0, E) (default 0: "
                        "exact predictions)")
    p.add_argument("--link-contention", action="store_true", default=None,
                   dest="link_contention",
                   help="liquid family: flows of different jobs through a host link slow "
                        "each other (instance link_contention, jobs' flow_time)")
    p.add_argument("--workers", type=int, nargs=2, metavar=("LOW", "HIGH"),
                   help="placement family: workers per job")
    for name in ("total-tasks", "iters-per-task"):
        p.add_argument(f"--{name}", type=int, dest=name.replace("-", "_"),
                       help="hare family only")
    p.add_argument("--task-seconds", type=float, dest="task_seconds", metavar="S",
                   help="hare family: compute time of a task on the job's fastest GPU "
                        "(default 0.75; a task is then whole mini-batches, at least enough "
                        "that sync < compute); --iters-per-task N fixes N batches instead")
    p.add_argument("--nlp-rounds", type=float, dest="nlp_rounds", metavar="F",
                   help="hare family: NLP jobs have F times the rounds of the others "
                        "(default 2)")
    p.add_argument("--arrival-rate", type=float, dest="arrival_rate", metavar="JOBS_PER_S",
                   help="hare family: Poisson arrival rate (default: --load times the "
                        "capacity of the --load-gpus reference cluster)")
    p.add_argument("--load-gpus", type=int, dest="load_gpus", metavar="N",
                   help="hare family: GPUs of the reference cluster --load refers to "
                        "(default 160, at the high level)")
    p.add_argument("--mix", metavar="CV,NLP,SPEECH,REC",
                   help="hare family: work shares of the four classes, e.g. 2,1,1,1; "
                        "liquid family: MODEL:COUNT,..., e.g. resnet50:4,inceptionv3:2,vgg16:2")
    p.add_argument("--heterogeneity-level", choices=("low", "middle", "high"),
                   help="hare family: V100 only / V100+K80 / V100+T4+K80+M60 (default high)")
    p.add_argument("--name")
    p.add_argument("--out", metavar="INSTANCE")
    for name, typ in (("jobs", int), ("gpus", int), ("gpu-types", int), ("hosts", int),
                      ("load", float), ("heterogeneity", float), ("sync-ratio", float)):
        p.add_argument(f"--{name}", type=typ, dest=name.replace("-", "_"))
    for name, typ in (("rounds", int), ("tasks", int), ("task-time", float),
                      ("sync-time", float), ("weight", float)):
        p.add_argument(f"--{name}", type=typ, nargs=2, metavar=("LOW", "HIGH"),
                       dest=name.replace("-", "_"))
    p.add_argument("--continuous", dest="integer", action="store_false", default=None,
                   help="draw real-valued times (default: integers)")
    p.add_argument("--mode", choices=("relaxed", "gang"))
    p.add_argument("--topology", action="store_true", default=None,
                   help="build a tree topology of the hosts instead of a GPU list")
    p.set_defaults(func=cmd_gen)

    p = sub.add_parser("plot", help="draw a schedule as a Gantt chart (needs matplotlib)")
    p.add_argument("instance")
    p.add_argument("schedule")
    p.add_argument("--out", required=True, metavar="FILE.png")
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("workloads", help="list the workload catalog with provenance")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_workloads)

    p = sub.add_parser("demo", help="solve a bundled instance and print a short table")
    p.add_argument("--seed", type=_seed, default=0)
    p.set_defaults(func=cmd_demo)

    bench = sub.add_parser("bench", help="benchmarks: instance sets, runs, reports")
    bsub = bench.add_subparsers(dest="bench_command", required=True, parser_class=_Parser)
    p = bsub.add_parser("gen", help="generate an instance set from a grid file")
    p.add_argument("grid")
    p.add_argument("--out", required=True, metavar="DIR")
    p.set_defaults(func=cmd_bench_gen)
    p = bsub.add_parser("run", help="run methods × instances × modes × seeds (resumable)",
                        epilog="exit status: 0 all runs recorded, 1 some recorded as errors, "
                        "2 bad input (nothing run; also when another runner holds the records "
                        "file), 130/143 stopped by SIGINT/SIGTERM (finished runs recorded; "
                        "rerun to resume)")
    p.add_argument("instances", metavar="DIR", help="an instance set (with manifest.json)")
    p.add_argument("--method", action="append", required=True)
    p.add_argument("--mode", action="append", choices=("relaxed", "gang"),
                   help="default: each instance's own mode")
    p.add_argument("--seeds", type=int, nargs="+", metavar="N")
    p.add_argument("--time-limit", type=float, metavar="S")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--records", required=True, metavar="FILE.jsonl")
    p.add_argument("--only", metavar="GLOB", help="only instances whose name matches, "
                   "e.g. 'exact-jobs10-*'")
    p.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    p.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler, e.g. tcp://h:8786")
    p.set_defaults(func=cmd_bench_run)
    p = bsub.add_parser("report", help="gap tables and plots from records")
    p.add_argument("records", nargs="+", metavar="FILE.jsonl", help="records files")
    p.add_argument("--out", required=True, metavar="DIR", help="the report's folder")
    p.add_argument("--manifest", action="append", metavar="SET",
                   help="an instance set (folder or manifest.json) whose best known values "
                        "join the records' as the gaps' reference; repeatable")
    p.add_argument("--format", action="append", choices=("md", "csv", "tex"),
                   help="table formats (default: all three); repeatable")
    p.add_argument("--no-plots", action="store_true", help="write no figures")
    p.set_defaults(func=cmd_bench_report)
    return parser


def _one_line(text: str, limit: int = 500) -> str:
    """An error message as one line of at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # usage error (one line, exit 2), --help or --version
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    try:
        for module in args.plugin:
            load_plugin(module)
        code: int = args.func(args)
        return code
    except InputError as exc:
        print(f"optsched: error: {_one_line(str(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's code for SIGINT
        print("optsched: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:  # e.g. an output path that cannot be written
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"optsched: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:
        if args.debug:
            raise
        text = _one_line(str(exc).splitlines()[0]) if str(exc) else ""
        print(f"optsched: internal error: {type(exc).__name__}: {text} (rerun with --debug)",
              file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
