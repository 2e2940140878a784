"""Certified regret of every online policy on real traces: each policy's objective and total
weighted JCT over the best lower bound known for its trace (arrivals known).

Usage: python benchmarks/regret.py [--cases heavy,light,philly-loaded,philly]
       [--policies fifo-perf:gang,...] [--out benchmarks/results/online/regret.jsonl]
       [--table]

Cases:

- ``heavy``, ``light``: Gavel's gen300_lam120_a2_b4_seed1 and gen300_lam2400_seed0 traces on
  12 V100 + 12 P100 + 12 K80, 360 s quanta (Gavel's round length);
- ``philly-loaded``: Pollux's philly.csv (82,247 jobs) on a tenth of the README's cluster
  (V100:100, T4:50, K80:25, M60:25), 3,600 s quanta: queues form, policies differ;
- ``philly``: the same on the README's 2,000 GPUs, where every job starts at once.

Each policy runs in its own execution model (gang for the Gavel and Tiresias baselines,
relaxed for HLAS and AlloX), and SRTF and Sched_Homo, which have both, in both; the bounds
hold in both modes, so one bound per trace serves every policy. Per case the script
computes the critical path, the fluid work bound at unit prices and at searched GPU-type
prices and, where the LP fits, the class-capacity LP placed by the best policy's checked
schedule (:data:`CAPACITY_INTERVALS` intervals, up to 10 minutes); on the loaded Philly
trace, where it does not, the LP on parts of the long jobs (:data:`PARTS_CASES`, about 15
minutes). On the Gavel traces also the best schedule :data:`OFFLINE` finds offline, every
arrival known, in each mode (:data:`OFFLINE_TIME_LIMIT` s): checked, it bounds the optimum
from above, so each policy's objective over it is a regret the true one is at least. One
JSON line per (case, policy, mode), per (case, offline mode) and per (case, bound);
resumable: rows already in --out are kept.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT.parent / "shared" / "peer-data"
GAVEL = PEER / "gavel" / "generated"
PHILLY = PEER / "pollux" / "traces" / "philly.csv"
CASES = {
    "heavy": (GAVEL / "gen300_lam120_a2_b4_seed1.trace", "V100:12,P100:12,K80:12", 360.0),
    "light": (GAVEL / "gen300_lam2400_seed0.trace", "V100:12,P100:12,K80:12", 360.0),
    "philly-loaded": (PHILLY, "V100:100,T4:50,K80:25,M60:25", 3600.0),
    "philly": (PHILLY, "V100:1000,T4:500,K80:250,M60:250", 3600.0),
}
#: (policy[:parameters], execution model): each policy in its own model, the clairvoyant
#: baselines that have both in both, and SRTF with paced placement (ours, relaxed mode)
POLICIES = (
    ("fifo-perf", "gang"),
    ("tiresias", "gang"),
    ("srtf", "gang"),
    ("srtf", "relaxed"),
    ("homo", "gang"),
    ("homo", "relaxed"),
    ("max-min-fairness", "gang"),
    ("max-throughput", "gang"),
    ("hlas", "relaxed"),
    ("allox", "relaxed"),
    ("srtf:placement=paced", "relaxed"),
)
#: the traces whose capacity LP is built (it is too large at Philly's size)
CAPACITY_CASES = ("heavy", "light")
#: the capacity LP's grid: on the heavy trace 100 intervals give 0.914 of the best policy's
#: total weighted JCT (51 s of CPU), 200 give 0.917 (444 s)
CAPACITY_INTERVALS = 100
CAPACITY_TIME_LIMIT = 600.0
#: the traces too large for one LP: the LP on parts of their long jobs instead
#: (optsched.regret.parts_bound): jobs whose critical path exceeds PARTS_LONGER_THAN s, in
#: arrival order, PARTS_SIZE per part, each on PARTS_INTERVALS intervals, within
#: PARTS_TIME_LIMIT s in all
PARTS_CASES = ("philly-loaded",)
PARTS_LONGER_THAN = 3600.0
PARTS_SIZE = 500
PARTS_INTERVALS = 100
PARTS_TIME_LIMIT = 3600.0
#: the offline method whose checked schedules bound the optimum from above, on the traces of
#: OFFLINE_CASES, per mode within OFFLINE_TIME_LIMIT s (with kick=2 it restarts until then)
OFFLINE = "priority-search:kick=2"
OFFLINE_CASES = ("heavy", "light")
OFFLINE_TIME_LIMIT = 120.0


def instance(case: str, mode: str):
    from optsched.traces import TraceMapping, parse_cluster, read_trace, trace_instance

    path, cluster, quantum = CASES[case]
    return trace_instance(
        read_trace(path), parse_cluster(cluster), TraceMapping(quantum=quantum), mode=mode
    )


def run_policy(case: str, policy: str, mode: str) -> dict:
    """One policy on one case in ``mode``: its objective, JCT and regret over its own
    fluid bound."""
    from optsched.errors import InputError
    from optsched.online.compare import parse_policy
    from optsched.online.run import simulate

    inst = instance(case, mode)
    record = not case.startswith("philly")  # Philly: metrics streamed, not checked
    name, params = parse_policy(policy)
    cpu = time.process_time()
    try:
        result = simulate(inst, name, params=params, record=record)
    except InputError as exc:  # e.g. a job wider than every GPU type (allocation policies)
        return {"case": case, "policy": policy, "mode": mode, "skipped": str(exc)}
    return {
        "case": case,
        "policy": policy,
        "mode": inst.mode,
        "jobs": inst.n_jobs,
        "gpus": inst.n_gpus,
        "checked": record,
        "objective": result.objective,
        "total_weighted_jct": result.metrics["total_weighted_jct"],
        "mean_jct_h": result.metrics["mean_jct"] / 3600,
        "makespan": result.metrics["makespan"],
        "regret": result.regret,  # over the default (fluid) level
        "cpu_s": time.process_time() - cpu,
    }


def run_offline(case: str, mode: str) -> dict:
    """:data:`OFFLINE` on one case in ``mode``: its checked objective and weighted JCT."""
    from optsched.online.compare import parse_policy
    from optsched.solve import solve

    inst = instance(case, mode)
    name, params = parse_policy(OFFLINE)
    cpu = time.process_time()
    result = solve(inst, name, time_limit=OFFLINE_TIME_LIMIT, params=params)
    assert result.objective is not None and result.metrics is not None
    return {
        "case": case,
        "policy": None,
        "offline": OFFLINE,
        "mode": mode,
        "objective": result.objective,
        "total_weighted_jct": result.metrics["total_weighted_jct"],
        "cpu_s": time.process_time() - cpu,
    }


def run_bounds(case: str, best: dict | None) -> dict:
    """The case's bounds: critical path, fluid at unit and searched prices and, for
    :data:`CAPACITY_CASES`, the capacity LP placed by ``best`` (a checked policy row)."""
    from optsched.critical_path import critical_path, critical_path_bound
    from optsched.exact.capacity import capacity_bound
    from optsched.exact.fluid import fluid_bound
    from optsched.regret import weighted_arrivals

    inst = instance(case, "relaxed")
    row: dict = {"case": case, "policy": None, "weighted_arrivals": weighted_arrivals(inst)}
    cpu = time.process_time()
    path = critical_path(inst)
    row["critical_path"] = critical_path_bound(inst, path)
    row["critical_path_s"] = time.process_time() - cpu
    for name, search in (("fluid_unit", False), ("fluid", True)):
        cpu = time.process_time()
        found = fluid_bound(inst, path=path, search=search)
        row[name], row[f"{name}_s"] = found.bound, time.process_time() - cpu
        row[f"{name}_prices"] = dict(zip(_types(inst), found.prices, strict=True))
    if case in CAPACITY_CASES and best is not None:
        cpu = time.process_time()
        lp = capacity_bound(
            inst,
            best["objective"],
            best["makespan"],
            CAPACITY_INTERVALS,
            time_limit=CAPACITY_TIME_LIMIT,
        )
        row["capacity"], row["capacity_status"] = lp.bound, lp.status
        row["capacity_s"] = time.process_time() - cpu
        row["capacity_placed_by"] = best["policy"]
        row["capacity_intervals"] = CAPACITY_INTERVALS
    if case in PARTS_CASES:
        from optsched.regret import long_job_parts, parts_bound

        def report(k: int, n: int, status: str, gain: float) -> None:
            print(f"{case}: part {k}/{n}: LP {status}, +{gain:.4g}", file=sys.stderr, flush=True)

        cpu = time.process_time()
        parts = long_job_parts(inst, PARTS_LONGER_THAN, PARTS_SIZE)
        found = parts_bound(
            inst, parts, intervals=PARTS_INTERVALS, time_limit=PARTS_TIME_LIMIT, progress=report
        )
        row["capacity_parts"], row["capacity_parts_s"] = found.value, time.process_time() - cpu
        row["capacity_parts_statuses"] = list(found.statuses)
        row["capacity_parts_jobs"] = sum(len(p) for p in parts)
    return row


PARTS_NAME = (
    f"class-capacity LP on parts of the long jobs (critical path > {PARTS_LONGER_THAN:g} s, "
    f"{PARTS_SIZE} per part)"
)


def _types(inst) -> list[str]:
    return [inst.gpus[members[0]].type for members in inst.class_members]


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def table(rows: list[dict]) -> str:
    """Markdown: per case, the bounds, then each policy's regret over the best of them."""
    from optsched.regret import ratio_text, regret_ratio

    out = [
        "# Certified regret of online policies on real traces",
        "",
        "`python benchmarks/regret.py`: every policy's objective Σ w_j C_j and total weighted "
        "JCT Σ w_j (C_j − a_j) over the best certified lower bound of its trace (arrivals "
        "known; the bound holds in both modes). A regret of R: no schedule, online or "
        "offline, does better than 1/R of the policy. The objective includes Σ w_j a_j, "
        "which no schedule changes: where arrivals span months (Philly) the objective's "
        "ratio is near 1 for every policy and the JCT's ratio is the one that measures. "
        f'On the Gavel traces, "best schedule known": the best checked schedule, `{OFFLINE}` '
        f"offline with every arrival known ({OFFLINE_TIME_LIMIT:g} s per mode) or a "
        "policy's (for relaxed mode a gang schedule too); the optimum lies between the bound "
        'and it, so "JCT regret ≥" is a regret the true one is at least (rounded down).',
        "",
    ]
    # the newest row of each (case, policy, mode): a rerun replaces an older one
    rows = list(
        {(r["case"], r["policy"], r.get("mode"), r.get("offline")): r for r in rows}.values()
    )
    for case in CASES:
        bounds = next(
            (r for r in rows if r["case"] == case and r["policy"] is None and "offline" not in r),
            None,
        )
        policies = [r for r in rows if r["case"] == case and r["policy"] is not None]
        if bounds is None or not policies:
            continue
        named = {
            "critical path": bounds["critical_path"],
            "fluid, unit prices": bounds["fluid_unit"],
            "fluid, searched prices": bounds["fluid"],
        }
        if bounds.get("capacity") is not None:
            named["class-capacity LP"] = bounds["capacity"]
        if bounds.get("capacity_parts") is not None:
            named[PARTS_NAME] = bounds["capacity_parts"]
        best_name = max(named, key=lambda k: named[k])
        best = named[best_name]
        arrivals = bounds["weighted_arrivals"]
        ran = [r for r in policies if "skipped" not in r]
        top = min(ran, key=lambda r: r["objective"])
        _, cluster, quantum = CASES[case]
        out += [
            f"## {case}: {top['jobs']:,} jobs on {cluster} ({top['gpus']:,} GPUs), "
            f"{quantum:g} s quanta",
            "",
            "| bound | Σ w_j C_j ≥ | ÷ best policy's | Σ w_j JCT ≥ | ÷ best policy's | CPU s |",
            "|---|---|---|---|---|---|",
        ]
        seconds = {
            "critical path": bounds["critical_path_s"],
            "fluid, unit prices": bounds["fluid_unit_s"],
            "fluid, searched prices": bounds["fluid_s"],
            "class-capacity LP": bounds.get("capacity_s"),
            PARTS_NAME: bounds.get("capacity_parts_s"),
        }
        for name, value in named.items():
            out.append(
                f"| {name}{' (best)' if name == best_name else ''} | {value:.6g} | "
                f"{value / top['objective']:.3f} | {value - arrivals:.6g} | "
                f"{(value - arrivals) / top['total_weighted_jct']:.3f} | {seconds[name]:.1f} |"
            )
        if bounds.get("capacity_status") not in (None, "optimal"):
            out.append(f"| class-capacity LP | {bounds['capacity_status']} | | | | |")
        known = _best_schedules(case, rows, ran)
        if known:
            out += [
                "",
                "| best schedule known | mode | Σ w_j C_j ≤ | Σ w_j JCT ≤ | bound ÷ it (JCT) |",
                "|---|---|---|---|---|",
            ]
            for mode, (value, source) in sorted(known.items()):
                out.append(
                    f"| {source} | {mode} | {value:.6g} | {value - arrivals:.6g} | "
                    f"{(best - arrivals) / (value - arrivals):.3f} |"
                )
        least = " JCT regret ≥ |" if known else ""
        out += [
            "",
            "| policy | mode | mean JCT h | Σ w_j C_j | regret | Σ w_j JCT | JCT regret |"
            f"{least} CPU s |",
            "|---|---|---|---|---|---|---|" + ("---|" if known else "") + "---|",
        ]
        for r in sorted(ran, key=lambda r: r["objective"]):
            jct = r["total_weighted_jct"]
            upper = known.get(r["mode"])
            at_least = (
                ""
                if not known
                else " – |"
                if upper is None
                else f" {ratio_text(regret_ratio(jct, upper[0] - arrivals), up=False)} |"
            )
            out.append(
                f"| {r['policy']} | {r['mode']} | {r['mean_jct_h']:.2f} | {r['objective']:.6g} "
                f"| {ratio_text(regret_ratio(r['objective'], best))} | {jct:.6g} | "
                f"{ratio_text(regret_ratio(jct, best - arrivals))} |{at_least} {r['cpu_s']:.1f} |"
            )
        for r in policies:
            if "skipped" in r:
                out.append(f"| {r['policy']} | skipped: {r['skipped']} | | | | | | |")
        out.append("")
    return "\n".join(out)


def _best_schedules(case: str, rows: list[dict], ran: list[dict]) -> dict[str, tuple[float, str]]:
    """Per mode the best checked schedule of ``case`` (objective, source), where the case
    has offline rows: theirs or a checked policy's; for relaxed mode a gang one too."""
    offline = [r for r in rows if r["case"] == case and r.get("offline")]
    if not offline:
        return {}
    found: dict[str, tuple[float, str]] = {}
    candidates = [(r["mode"], r["objective"], f"`{r['offline']}`, offline") for r in offline]
    candidates += [(r["mode"], r["objective"], f"`{r['policy']}`") for r in ran if r["checked"]]
    for mode, value, source in candidates:
        for into in (mode, "relaxed"):  # a gang schedule is a relaxed one
            if into not in found or value < found[into][0]:
                found[into] = (value, source if into == mode else f"{source} ({mode} mode)")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument(
        "--policies",
        default=",".join(f"{p}:{m}" for p, m in POLICIES),
        help="POLICY[:KEY=VALUE]:MODE,... (default: every pair of POLICIES)",
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "online" / "regret.jsonl"
    )
    parser.add_argument("--table", action="store_true", help="only print the table of --out")
    args = parser.parse_args(argv)
    from optsched.output import write_file

    if not args.table:
        for case in args.cases.split(","):
            if not CASES[case][0].exists():
                print(f"{case}: {CASES[case][0]} not found, skipped", file=sys.stderr)
                continue
            for pair in args.policies.split(","):
                policy, mode = pair.rsplit(":", 1)
                if any(
                    r["case"] == case and r["policy"] == policy and r.get("mode") == mode
                    for r in load(args.out)
                ):
                    continue
                row = run_policy(case, policy, mode)
                with args.out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(json.dumps(row), file=sys.stderr, flush=True)
            for mode in ("relaxed", "gang") if case in OFFLINE_CASES else ():
                if not any(
                    r["case"] == case and r.get("offline") == OFFLINE and r["mode"] == mode
                    for r in load(args.out)
                ):
                    row = run_offline(case, mode)
                    with args.out.open("a") as f:
                        f.write(json.dumps(row) + "\n")
                    print(json.dumps(row), file=sys.stderr, flush=True)
            if not any(
                r["case"] == case and r["policy"] is None and "offline" not in r
                for r in load(args.out)
            ):
                done = [
                    r
                    for r in load(args.out)
                    if r["case"] == case and r.get("checked") and "skipped" not in r
                ]
                best = min(done, key=lambda r: r["objective"], default=None)
                row = run_bounds(case, best)
                with args.out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(json.dumps(row), file=sys.stderr, flush=True)
    text = table(load(args.out))
    write_file(args.out.with_suffix(".md"), text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
