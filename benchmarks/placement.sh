#!/usr/bin/env bash
# Liquid placement on the paper's two clusters (TPDS'22 §7), each with its own gap table:
#   k80: the local cluster, 5 hosts × 4 K80 (12 GB, 24 cores, 188 GB), 10 Gbit/s
#        (benchmarks/grids/placement-k80.json: 2-6 jobs);
#   t4:  the cloud cluster, 20 hosts × 2 T4 (16 GB, 48 vCPUs, 186 GB), 15 Gbit/s
#        (benchmarks/grids/placement-t4.json: 4-12 jobs);
#   rack: 4-20 hosts × 2 T4 in racks of 4 hosts and domains of 2 racks, where the paper's
#        cross-domain term counts (benchmarks/grids/placement.json, instances/placement: no
#        published counterpart; it gives the benchmark library its best values).
# k80 and t4 have no rack or domain labels (the paper gives none); jobs are the reference
# code's distributed jobs, 1 PS + 2 workers (rack: 1-3 workers), every container 1 GPU,
# bandwidth weight 1-3; 3 seeds per cell. The link speed only changes durations in our
# model, never the placement cost.
# Methods: best-fit per job (eq. 3) as the reference code runs it (line18=0, the default) and
# literal Alg. 1 (line18=1); the GGA (eq. 8 fitness) with its default repair and with the
# paper's first-fit repair; random, spread, pack; CP-SAT and HiGHS (20 s, 2 single-thread runs
# in parallel) for the optimum and the bound. Both cost forms (paper: λ = 0.5, cross-domain =
# number of hosts; code: the reconstructed order-free form, 1 per remote pair on a flat
# cluster). Then GGA vs the proved optimum on small instances (gga_optimum.md). Resumable
# (about 15-20 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
results=benchmarks/results/placement
for cluster in k80 t4 rack; do
  name=placement-$cluster
  [[ $cluster == rack ]] && name=placement
  set_dir=instances/$name
  out=$results/$cluster
  mkdir -p "$out"
  [[ -f $set_dir/manifest.json ]] ||
    optsched bench gen benchmarks/grids/$name.json --out "$set_dir"
  for cost in paper code; do
    run() { optsched bench run "$set_dir" --param cost=$cost --workers 2 \
              --records "$out/records.jsonl" "$@"; }
    run --method bestfit --method gga --method random --method spread --method pack
    run --method bestfit --param line18=1
    run --method gga --param repair=firstfit
    run --method cpsat --method milp-highs --time-limit 20
  done
done
python benchmarks/gga_optimum.py --seeds 3 --variant mixed:eq8 --variant jobfit:eq8 \
  --variant randomfit:eq8 --variant firstfit:eq8 --variant mixed:cost \
  --out $results/gga_optimum.md
python benchmarks/placement_summary.py $results > $results/summary.md
