"""JCT CDFs of offline Hare and every online policy on one instance (as HPDC'22 draws them).

Usage: python benchmarks/hare_online_cdf.py INSTANCE OUT.png
"""

from __future__ import annotations

import sys

from optsched import check, solve
from optsched.io import load_instance
from optsched.online.run import simulate
from optsched.plot import plot_jct_cdf

GANG = ("fifo-perf", "tiresias")


def main(argv: list[str]) -> int:
    inst = load_instance(argv[0])
    jcts = {}
    for method in ("hare-lp-ect", "hlas", "srtf", "homo", "allox", *GANG):
        mode = "gang" if method in GANG else "relaxed"
        if method.startswith("hare"):
            schedule = solve(inst, method).schedule
        else:
            schedule = simulate(inst.with_mode(mode), method).schedule
        assert schedule is not None
        completion = check(inst.with_mode(mode), schedule).completion
        assert completion is not None
        jcts[method] = [completion[job.id] - job.arrival for job in inst.jobs]
    plot_jct_cdf(jcts, argv[1], title=f"{inst.name}: JCT CDF")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
