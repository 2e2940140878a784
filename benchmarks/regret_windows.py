"""The table of ``benchmarks/regret_windows.sh``: per window of the Philly trace, the best
policy's mean JCT and the bound on the total weighted JCT as a share of the best policy's,
under each regret level, and every policy's JCT regret under the stronger level; where the
run has an offline schedule (``compare --offline``), the bound as a share of the best
schedule known too, and each JCT regret as the interval the true one lies in.

Usage: python benchmarks/regret_windows.py benchmarks/results/online/windows
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from optsched.regret import ratio_text

LEVELS = ("capacity", "lagrangian")


def main(folder: str) -> str:
    days = sorted(
        {int(p.stem.split("-")[0].removeprefix("day")) for p in Path(folder).glob("day*.json")}
    )
    out = [
        "# Certified regret on loaded windows of the Philly trace",
        "",
        "`bash benchmarks/regret_windows.sh`: the jobs arriving on one day on V100:10, T4:5, "
        'K80:3, M60:2 (20 GPUs), four relaxed-mode policies, 300 s per bound. "bound ÷ best": '
        "the certified lower bound on the total weighted JCT over the best policy's (1 would "
        "prove that policy optimal); the JCT regrets are over the `lagrangian` level's bound "
        "(rounded up). "
        '"bound ÷ schedule": the same bound over the best checked schedule known (a '
        "priority-search schedule of the window with every arrival known, 120 s, or a "
        "policy's): the optimum lies between the two, so each JCT regret is given as the "
        "interval the policy's true one lies in (at least over that schedule, at most over "
        "the bound; rounded outwards).",
        "",
        "| day | jobs | best policy | its mean JCT h | bound ÷ best, `capacity` | bound ÷ best, "
        "`lagrangian` | bound from | best schedule | bound ÷ schedule | JCT regrets (paced, "
        "srtf, hlas, allox) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    ratios: dict[str, list[float]] = {level: [] for level in LEVELS}
    for day in days:
        runs = {
            level: json.loads((Path(folder) / f"day{day}-{level}.json").read_text())
            for level in LEVELS
            if (Path(folder) / f"day{day}-{level}.json").exists()
        }
        if len(runs) < len(LEVELS):
            continue
        best = {
            level: min(data["policies"], key=lambda p: p["regret_jct"])
            for level, data in runs.items()
        }
        share = {level: 1 / best[level]["regret_jct"] for level in runs}
        for level in runs:
            ratios[level].append(share[level])
        data, top = runs["lagrangian"], best["lagrangian"]
        out.append(
            f"| {day} | {data['jobs']} | {top['policy']} | {top['mean_jct']:.3f} | "
            f"{share['capacity']:.3f} | {share['lagrangian']:.3f} | "
            f"{data['bounds']['relaxed']['source']} | {_schedule(data)} | {_regrets(data)} |"
        )
    if ratios["capacity"]:
        mid = {level: sorted(v)[len(v) // 2] for level, v in ratios.items()}
        out += [
            "",
            f"Median bound ÷ best over {len(ratios['capacity'])} windows: "
            f"{mid['capacity']:.3f} at the `capacity` level, {mid['lagrangian']:.3f} at the "
            "`lagrangian` level (each includes the critical path and the fluid bound).",
        ]
    names = ("day80-lagrangian", *(p.stem for p in Path(folder).glob("day80-c[0-9]*")))
    sizes = sorted(
        (
            json.loads(path.read_text())
            for name in names
            if (path := Path(folder) / f"{name}.json").exists()
        ),
        key=lambda data: data["gpus"],
    )
    if len(sizes) > 1:
        out += [
            "",
            "## Day 80 as the cluster grows",
            "",
            "The same window at the `lagrangian` level on V100:10, T4:5, K80:3, M60:2 and on "
            "about 1.5 and 2 times as many GPUs of each type.",
            "",
            "| GPUs | best policy | bound ÷ best | best schedule | bound ÷ schedule | JCT "
            "regrets (paced, srtf, hlas, allox) |",
            "|---|---|---|---|---|---|",
        ]
        for data in sizes:
            top = min(data["policies"], key=lambda p: p["regret_jct"])
            out.append(
                f"| {data['gpus']} | {top['policy']} | {1 / top['regret_jct']:.3f} | "
                f"{_schedule(data)} | {_regrets(data)} |"
            )
    return "\n".join(out) + "\n"


def _schedule(data: dict) -> str:
    """The best schedule known and the bound over it: two cells ("–" without one)."""
    known = data.get("schedules", {}).get("relaxed")
    if not known:
        return "– | –"
    share = data["bounds"]["relaxed"]["weighted_jct"] / known["weighted_jct"]
    return f"{known['source']} | {share:.3f}"


def _regrets(data: dict) -> str:
    """Each policy's JCT regret: the interval its true one lies in where a best schedule is
    known (rounded outwards), else the regret over the bound (rounded up)."""
    known = data.get("schedules", {}).get("relaxed")
    return ", ".join(
        (f"{ratio_text(p['regret_jct_least'], up=False)}–" if known else "")
        + ratio_text(p["regret_jct"])
        for p in data["policies"]
    )


if __name__ == "__main__":
    sys.stdout.write(main(sys.argv[1]))
