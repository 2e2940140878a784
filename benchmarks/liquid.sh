#!/usr/bin/env bash
# Liquid's experiments (TPDS'22 §7, seeds.md §2.7) as orderings of methods, with the liquid
# cluster policy of optsched (instance@2: launch 30 s / save 10 s phases, the §2.7
# placement → duration table, one-rack clusters; 10 seeds per cell):
#   liquid-immediate (Fig. 18): 20 jobs of 1 PS + 2 workers (ResNet-50 : Inception-V3 :
#     VGG-16 = 4:2:2) arriving one by one (Poisson, mean gap 60/120/240 s) on 5 hosts × 4 K80;
#     immediate-mode best-fit (both cost forms) vs random, spread and pack placement;
#   liquid-batch (Fig. 19): 5/10/15/20 hosts × 2 T4 with 1.6 jobs per host all submitted at
#     once; batch mode (5 s) with the GGA (both cost forms) and with best-fit (Liquid's released
#     experiment), vs immediate best-fit, random, spread, pack;
#   both: best-fit and the GGA on the code-form cost with link contention as well;
#   liquid-optimisations (§6): 40 single-task jobs on 5 hosts × 2 T4 (mean gap 10/20/40 s);
#     Liquid without its optimisations (heartbeat-only reporting every 5 s, no sharing, no
#     pre-scheduling), then each optimisation alone, then all three.
# Resumable (about 3 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
out=benchmarks/results/liquid
mkdir -p $out
for grid in liquid-immediate liquid-batch liquid-optimisations; do
  [[ -f instances/$grid/manifest.json ]] ||
    optsched bench gen benchmarks/grids/$grid.json --out instances/$grid
done
run() {  # run SET PARAM...
  local set=$1; shift
  optsched bench run instances/$set --method liquid "${@/#/--param=}" --workers 2 \
    --records $out/records.jsonl
}
for cost in paper code; do
  run liquid-immediate placement=bestfit cost=$cost
  run liquid-batch placement=bestfit cost=$cost
  run liquid-batch placement=gga batch=5 cost=$cost
done
for placement in random spread pack; do
  run liquid-immediate placement=$placement
  run liquid-batch placement=$placement
done
run liquid-batch placement=bestfit batch=5 cost=code
for setting in "liquid-immediate placement=bestfit" "liquid-batch placement=bestfit" \
               "liquid-batch placement=gga batch=5"; do
  # shellcheck disable=SC2086
  run $setting cost=code contention=1
done
for flags in "heartbeat=5" "heartbeat=5 share=1" "heartbeat=5 preschedule=1" "heartbeat=0" \
             "heartbeat=0 share=1 preschedule=1"; do
  # shellcheck disable=SC2086
  run liquid-optimisations $flags
done
python benchmarks/liquid_summary.py $out > $out/summary.md
