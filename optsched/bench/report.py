"""Reports from run records: gap tables (Markdown, CSV, LaTeX) and plots.

The reference of each (instance, mode) is the best objective any run found and the best
certified bound any run proved, over the records and, when given, the instance sets'
manifests (which keep the best values of every run ever recorded into them); a gang
schedule counts for relaxed mode too (it is relaxed-feasible with the same objective), and
a relaxed bound for gang mode (it bounds the gang optimum). A record's gap
is ``(objective − best bound) / objective`` (the gap of docs/model.md, against the best bound
known); a placement's is ``objective − best bound`` (its cost can be zero or negative, where a
ratio means nothing). When the best objective meets the best bound within 1e-6 the optimum
is known and the gap is a gap to the optimum; the column "gap vs" says which. Rows aggregate
one (mode, grid cell, method): the mean gap with a 95 % Student-t confidence interval over
the runs (instance seeds × method seeds) — an interval that crosses 0, below which no gap can
lie, is shown clipped at 0 and marked — the max gap, how many runs proved optimality, mean
objective / best objective, and mean runtime (one-off solver start-up excluded: it is
``extra.startup_s``).

Outputs go through :mod:`optsched.output`: the targets are checked before anything is
rendered, every table and figure is rendered in memory (figures as PNG bytes), and all of
them are then written atomically and all or nothing, so a failed report leaves the previous
one whole.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from optsched.bench.manifest import best_bound, best_key
from optsched.bench.records import key_plugin
from optsched.errors import InputError
from optsched.output import output_target, write_outputs
from optsched.result import PLACEMENT_MODE, is_optimal

FORMATS = ("md", "csv", "tex")


def dedupe(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Records with distinct keys: of each key the first that is not an error (a run retried
    with ``bench run --retry-errors``), else the first, in the order of first appearance;
    of a plug-in method, only the runs of its newest code (the plug-in hash in the key of its
    last record), so that the runs of an edited plug-in are not pooled with the old ones."""
    records = list(records)
    codes = [key_plugin(r["key"]) for r in records]
    newest = {r["method"]: c for r, c in zip(records, codes, strict=True) if c is not None}
    kept: dict[str, Mapping[str, Any]] = {}
    for record, code in zip(records, codes, strict=True):
        if code is not None and newest[record["method"]] != code:
            continue
        have = kept.get(record["key"])
        if have is None or (have["status"] == "error" and record["status"] != "error"):
            kept[record["key"]] = record
    return list(kept.values())


def references(
    records: Iterable[Mapping[str, Any]], manifests: Iterable[Any] = ()
) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (instance, :func:`~optsched.bench.manifest.best_key`: the mode, and for a
    placement its cost form): best objective (for relaxed, the gang objective too:
    :func:`~optsched.bench.manifest.best_objective`), best bound (for gang, the relaxed
    bound too: :func:`~optsched.bench.manifest.best_bound`), and whether the optimum is known, over
    ``records`` and the ``best`` entries of ``manifests``
    (:class:`~optsched.bench.manifest.Manifest`)."""
    ref: dict[tuple[str, str], dict[str, Any]] = {}

    def offer(
        key: tuple[str, str],
        objective: float | None,
        bound: float | None,
        tolerance: float | None = None,
    ) -> None:
        entry = ref.setdefault(key, {"objective": None, "bound": None, "tolerance": None})
        if objective is not None and (
            entry["objective"] is None or objective < entry["objective"]
        ):
            entry["objective"], entry["tolerance"] = objective, tolerance
        if bound is not None and (entry["bound"] is None or bound > entry["bound"]):
            entry["bound"] = bound

    for r in records:
        offer((r["instance"], best_key(r)), r.get("objective"), r.get("bound"), r.get("tolerance"))
    for manifest in manifests:
        for name, entry in manifest.instances.items():
            for mode, best in entry.get("best", {}).items():
                offer((name, mode), best.get("objective"), best.get("bound"))
    # a relaxed bound bounds the gang optimum too, and a gang schedule is a relaxed one
    for (name, key), entry in ref.items():
        if key == "gang":
            entry["bound"] = best_bound(
                {k: ref.get((name, k), {}) for k in ("gang", "relaxed")}, "gang"
            )[0]
        gang = ref.get((name, "gang"), {})
        objective = gang.get("objective") if key == "relaxed" else None
        if objective is not None and (
            entry["objective"] is None or objective < entry["objective"]
        ):
            entry["objective"], entry["tolerance"] = objective, gang["tolerance"]
    for entry in ref.values():
        # the best objective's own tolerance where its record states one (absolute, see
        # docs/model.md), else the relative one of manifests and older records
        entry["optimum_known"] = is_optimal(
            entry["objective"], entry["bound"], entry.pop("tolerance")
        )
    return ref


def _cell_text(value: Any) -> str:
    return "–".join(map(str, value)) if isinstance(value, list) else str(value)


def _label(record: Mapping[str, Any]) -> str:
    """A row's method: its name, with its parameters when it has any (runs with other
    parameters, or another cost form, are other rows)."""
    params = record.get("params") or {}
    if not params:
        return str(record["method"])
    return f"{record['method']} [{', '.join(f'{k}={v}' for k, v in sorted(params.items()))}]"


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _mean_ci(values: Sequence[float]) -> tuple[float | None, float | None, float | None, bool]:
    """Mean and its 95 % Student-t confidence interval (low, high; None for n < 2) of values
    that cannot be negative (gaps): a low end below 0 is clipped to 0 and said so (the last
    item)."""
    mean = _mean(values)
    n = len(values)
    if mean is None or n < 2:
        return mean, None, None, False
    from scipy import stats  # here: importing it takes a second, every command paid for it

    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return mean, max(mean - half, 0.0), mean + half, mean - half < 0


def _own_bound(record: Mapping[str, Any]) -> float | None:
    """The bound a run's method proved itself (not the critical path every ``solve`` result
    falls back on): ``extra.bound_method``, or a placement's bound."""
    if record["mode"] == PLACEMENT_MODE:
        return record.get("bound")
    return (record.get("extra") or {}).get("bound_method")


def gap_rows(
    records: Iterable[Mapping[str, Any]], manifests: Iterable[Any] = ()
) -> tuple[list[str], list[dict[str, Any]]]:
    """The cell columns and one aggregated row per (mode, cell, method), against the best
    values of the records and ``manifests`` (:func:`references`)."""
    records = dedupe(records)
    if not records:
        raise InputError("no records to report")
    ref = references(records, manifests)
    cell_cols = sorted({k for r in records for k in r.get("cell", {})})
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        cell = tuple(_cell_text(r.get("cell", {}).get(k, "")) for k in cell_cols)
        groups[(r["mode"], cell, _label(r))].append(r)

    def order(key: tuple[Any, ...]) -> tuple[Any, ...]:
        mode, cell, method = key
        numeric = tuple(
            (0, float(c), "") if c.replace(".", "", 1).isdigit() else (1, 0.0, c) for c in cell
        )
        return (mode, numeric, method)

    rows = []
    for key in sorted(groups, key=order):
        mode, cell, method = key
        group = groups[key]
        gaps, ratios, shortfalls = [], [], []
        for r in group:
            best = ref[r["instance"], best_key(r)]
            own = _own_bound(r)
            if own is not None and best["bound"] is not None:
                short = best["bound"] - own
                if mode != PLACEMENT_MODE:
                    short = short / best["bound"] if best["bound"] > 0 else None
                if short is not None:
                    shortfalls.append(max(short, 0.0))
            obj = r.get("objective")
            if obj is None:
                continue
            if best["bound"] is not None and mode == PLACEMENT_MODE:
                gaps.append(max(obj - best["bound"], 0.0))
            elif best["bound"] is not None and obj > 0:
                gaps.append(max((obj - best["bound"]) / obj, 0.0))
            if best["objective"] and mode != PLACEMENT_MODE:
                ratios.append(obj / best["objective"])
        gap_mean, gap_low, gap_high, clipped = _mean_ci(gaps)
        rows.append(
            {
                "mode": mode,
                **dict(zip(cell_cols, cell, strict=True)),
                "method": method,
                "runs": len(group),
                "solved": sum(r.get("objective") is not None for r in group),
                "optimal": sum(r["status"] == "optimal" for r in group),
                "errors": sum(r["status"] == "error" for r in group),
                "reference": (
                    "optimum"
                    if all(ref[r["instance"], best_key(r)]["optimum_known"] for r in group)
                    else "best bound"
                ),
                "gap_kind": "absolute" if mode == PLACEMENT_MODE else "relative",
                "gap_mean": gap_mean,
                "gap_ci_low": gap_low,
                "gap_ci_high": gap_high,
                "gap_ci_clipped": clipped,
                "gap_max": max(gaps) if gaps else None,
                "obj_over_best": _mean(ratios),
                "bound_below_best": _mean(shortfalls),
                "runtime_mean_s": _mean([r["runtime_s"] for r in group]),
                "max_rho_mean": _metric_mean(group, "max_rho"),
                "p99_jct_mean": _metric_mean(group, "p99_jct"),
            }
        )
    return cell_cols, rows


def _metric_mean(group: Sequence[Mapping[str, Any]], key: str) -> float | None:
    """The mean of a schedule metric over the records that have it (None: none has)."""
    return _mean([r["metrics"][key] for r in group if key in (r.get("metrics") or {})])


def _gap(value: float | None, kind: str) -> str:
    if value is None:
        return "–"
    return f"{100 * value:.2f} %" if kind == "relative" else f"{value:.4g}"


def _num(value: float | None, fmt: str = ".3f") -> str:
    return "–" if value is None else format(value, fmt)


def _display(cell_cols: Sequence[str], row: Mapping[str, Any]) -> list[str]:
    kind = row["gap_kind"]
    ci = ""
    if row["gap_ci_low"] is not None:
        low = _gap(row["gap_ci_low"], kind) + ("*" if row["gap_ci_clipped"] else "")
        ci = f" [{low}, {_gap(row['gap_ci_high'], kind)}]"
    runs = str(row["runs"]) + (f" ({row['errors']} errors)" if row["errors"] else "")
    return [
        row["mode"],
        *(str(row[c]) for c in cell_cols),
        row["method"],
        runs,
        f"{row['optimal']}/{row['runs']}",
        _gap(row["gap_mean"], kind) + ci,
        _gap(row["gap_max"], kind),
        _num(row["obj_over_best"], ".4f"),
        _gap(row["bound_below_best"], kind),
        _num(row["runtime_mean_s"], ".3g"),
        _num(row.get("max_rho_mean"), ".3g"),
        _num(row.get("p99_jct_mean"), ".4g"),
        row["reference"],
    ]


HEADERS = [
    "runs",
    "proved optimal",
    "gap mean [95% CI]",
    "gap max",
    "obj / best",
    "own bound below best",
    "runtime s (mean)",
    "max ρ (mean)",
    "p99 JCT (mean)",
    "gap vs",
]


def notes(rows: Sequence[Mapping[str, Any]], sources: Sequence[str] = ()) -> list[str]:
    """The lines that explain a table: where its reference values come from, and what a
    clipped interval or an absolute gap means when the table has one."""
    where = "these records" + (f" and {', '.join(sources)}" if sources else "")
    out = [
        f"Gaps are to the best bound known for each instance and mode, over {where}; "
        '"gap vs" says whether that bound is the proved optimum.'
    ]
    if any(r["gap_ci_clipped"] for r in rows):
        out.append(
            "\\* The 95 % Student-t interval reached below 0, which no gap can; its "
            "low end is shown clipped at 0."
        )
    if any(r["bound_below_best"] is not None for r in rows):
        out.append(
            '"own bound below best": how far the bound a method proved itself falls '
            "short of the best bound (mean; relative to it, absolute for placements); "
            "– where a method proves none of its own (its results fall back on the "
            "critical path, which this column leaves out)."
        )
    if any(r.get("max_rho_mean") is not None for r in rows):
        out.append(
            '"max ρ": the largest finish-time fairness ratio of a schedule (a job\'s JCT over '
            "its time alone on a 1/N share of the cluster), and p99 JCT its 99th-percentile "
            "job completion time; both the mean over the runs."
        )
    if any(r["gap_kind"] == "absolute" for r in rows):
        out.append(
            "Placement gaps are absolute (cost − best bound): Liquid's cost can be "
            "zero or negative, where a ratio means nothing."
        )
    return out


def to_markdown(
    cell_cols: Sequence[str], rows: Sequence[Mapping[str, Any]], sources: Sequence[str] = ()
) -> str:
    header = ["mode", *cell_cols, "method", *HEADERS]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_display(cell_cols, r)) + " |" for r in rows]
    return "\n".join([*lines, "", *notes(rows, sources)]) + "\n"


def _tex_escape(text: str) -> str:
    for a, b in (
        ("\\", r"\textbackslash{}"),
        ("&", r"\&"),
        ("%", r"\%"),
        ("_", r"\_"),
        ("#", r"\#"),
        ("±", r"$\pm$"),
        ("–", "--"),
        ("*", r"$^*$"),
    ):
        text = text.replace(a, b)
    return text


def to_latex(cell_cols: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    header = ["mode", *cell_cols, "method", *HEADERS]
    lines = [
        r"\begin{tabular}{" + "l" * (len(cell_cols) + 2) + "r" * (len(HEADERS) - 1) + "l}",
        r"\toprule",
        " & ".join(_tex_escape(h) for h in header) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(_tex_escape(c) for c in _display(cell_cols, r)) + r" \\" for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def csv_text(cell_cols: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as CSV text (``\\r\\n`` line ends, as the csv module writes them)."""
    fields = [
        "mode",
        *cell_cols,
        "method",
        "runs",
        "solved",
        "optimal",
        "errors",
        "reference",
        "gap_kind",
        "gap_mean",
        "gap_ci_low",
        "gap_ci_high",
        "gap_ci_clipped",
        "gap_max",
        "obj_over_best",
        "bound_below_best",
        "runtime_mean_s",
        "max_rho_mean",
        "p99_jct_mean",
    ]
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=fields)
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def to_csv(path: Path, cell_cols: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> None:
    """Write :func:`csv_text` to ``path`` (atomically)."""
    write_outputs([(path, csv_text(cell_cols, rows))])


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    plt.close(fig)
    return buf.getvalue()


def profiles(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, list[float]]]:
    """Per mode and method, the sorted ratios objective / reference (inf: unsolved).

    The reference of an (instance, mode) is its best certified bound, so a ratio reads as a
    proven factor from the optimum; where no positive bound exists, the best objective.
    """
    records = dedupe(records)
    ref = references(records)
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        best = ref[r["instance"], best_key(r)]
        base = best["bound"] if best["bound"] and best["bound"] > 0 else best["objective"]
        obj = r.get("objective")
        out[r["mode"]][r["method"]].append(obj / base if obj is not None and base else math.inf)
    return {mode: {m: sorted(v) for m, v in by.items()} for mode, by in out.items()}


def plot_profiles(records: Iterable[Mapping[str, Any]], path: Path | None = None) -> bytes:
    """Performance profiles (Dolan & Moré 2002) against the best bound: the share of runs
    whose objective is within τ × the best certified bound of their instance, as PNG bytes
    (also written atomically to ``path`` when given)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    data = profiles(records)
    fig, axes = plt.subplots(1, len(data), figsize=(5 * len(data), 3.6), squeeze=False)
    for ax, (mode, by_method) in zip(axes[0], sorted(data.items()), strict=True):
        finite = [x for v in by_method.values() for x in v if math.isfinite(x)]
        tau_max = max(finite, default=1.0) * 1.02 + 1e-9
        for method, ratios in sorted(by_method.items()):
            xs = [1.0] + [x for x in ratios if math.isfinite(x)] + [tau_max]
            ys = [sum(x <= t for x in ratios) / len(ratios) for t in xs]
            ax.step(xs, ys, where="post", label=method)
        ax.xaxis.set_major_locator(MaxNLocator(6))
        ax.set_xlabel("τ (objective / best bound)")
        ax.set_ylabel("share of runs within τ")
        ax.set_ylim(0, 1.02)
        ax.set_title(f"{mode} mode")
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    png = _png(fig)
    if path is not None:
        write_outputs([(path, png)])
    return png


def plot_gaps(
    cell_cols: Sequence[str], rows: Sequence[Mapping[str, Any]], path: Path | None = None
) -> bytes:
    """Mean gap (with 95 % CI) per grid cell, one line per (method, mode), as PNG bytes
    (also written atomically to ``path`` when given)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = list(dict.fromkeys(" ".join(f"{c}={r[c]}" for c in cell_cols) or "all" for r in rows))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.2 * len(cells)), 3.6))
    series: dict[str, dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for r in rows:
        label = " ".join(f"{c}={r[c]}" for c in cell_cols) or "all"
        series[f"{r['method']} ({r['mode']})"][label] = r
    for name, by_cell in sorted(series.items()):
        xs = [
            i for i, c in enumerate(cells) if c in by_cell and by_cell[c]["gap_mean"] is not None
        ]
        scale = [100.0 if by_cell[cells[i]]["gap_kind"] == "relative" else 1.0 for i in xs]
        ys = [k * by_cell[cells[i]]["gap_mean"] for k, i in zip(scale, xs, strict=True)]
        low = [
            k * by_cell[cells[i]]["gap_ci_low"]
            if by_cell[cells[i]]["gap_ci_low"] is not None
            else y
            for k, i, y in zip(scale, xs, ys, strict=True)
        ]
        high = [
            k * by_cell[cells[i]]["gap_ci_high"]
            if by_cell[cells[i]]["gap_ci_high"] is not None
            else y
            for k, i, y in zip(scale, xs, ys, strict=True)
        ]
        ax.errorbar(
            xs,
            ys,
            yerr=[
                [y - lo for y, lo in zip(ys, low, strict=True)],
                [hi - y for y, hi in zip(ys, high, strict=True)],
            ],
            marker="o",
            capsize=3,
            label=name,
        )
    ax.set_xticks(range(len(cells)), cells, rotation=30, ha="right", fontsize=8)
    absolute = all(r["gap_kind"] == "absolute" for r in rows)
    ax.set_ylabel("cost − best bound" if absolute else "gap to best bound (%)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    png = _png(fig)
    if path is not None:
        write_outputs([(path, png)])
    return png


def write_report(
    records: Iterable[Mapping[str, Any]],
    out: str | Path,
    *,
    formats: Sequence[str] = FORMATS,
    plots: bool = True,
    inputs: Sequence[str | Path] = (),
    manifests: Sequence[Any] = (),
) -> list[Path]:
    """Write ``gaps.{md,csv,tex}`` and (with matplotlib) ``gaps.png``, ``profile.png``.

    Gaps are to the best bound of the records and of ``manifests``
    (:class:`~optsched.bench.manifest.Manifest`, e.g. the instance sets' own), which the
    Markdown table names below it; a manifest none of whose instances is in the records is
    refused (InputError: the manifest of another set).

    ``out`` is a folder (created if missing, in a folder that must exist; an empty path is
    refused); ``inputs`` are the records
    files, which no output may overwrite. Everything is checked and rendered before the
    first byte is written, and the files are then written all or nothing
    (:func:`optsched.output.write_outputs`).
    """
    records = dedupe(records)
    for fmt in formats:
        if fmt not in FORMATS:
            raise InputError(f"unknown report format {fmt!r} (known: {', '.join(FORMATS)})")
    if str(out) == "":
        raise InputError("--out: empty path")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {str(out)!r} exists and is not a folder")
    if not out.exists() and not out.absolute().parent.is_dir():
        raise InputError(f"--out {str(out)!r}: folder {str(out.parent)!r} does not exist")
    names = {r["instance"] for r in records}
    for manifest in manifests:
        if not names & set(manifest.instances):
            raise InputError(
                f"--manifest {str(manifest.path)!r}: none of its instances is in "
                "the records (the manifest of another instance set?)"
            )
    cell_cols, rows = gap_rows(records, manifests)
    sources = [str(m.path) for m in manifests]
    outputs: list[tuple[Path, str | bytes]] = []
    for fmt in dict.fromkeys(formats):
        path = out / f"gaps.{fmt}"
        if fmt == "md":
            outputs.append((path, to_markdown(cell_cols, rows, sources)))
        elif fmt == "tex":
            outputs.append((path, to_latex(cell_cols, rows)))
        else:
            outputs.append((path, csv_text(cell_cols, rows)))
    if plots:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            pass
        else:
            outputs += [
                (out / "gaps.png", plot_gaps(cell_cols, rows)),
                (out / "profile.png", plot_profiles(records)),
            ]
    try:
        out.mkdir(exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"--out {str(out)!r}: cannot create the folder: {exc.strerror or exc}"
        ) from None
    for path, _ in outputs:
        output_target(path, "--out", inputs=inputs)
    write_outputs(outputs)
    return [path for path, _ in outputs]
