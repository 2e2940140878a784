#!/usr/bin/env bash
# Liquid's experiments (TPDS'22 §7) with optsched's liquid cluster policy (instance@2: launch
# 30 s / save 10 s phases assumed, the §2.7 placement → duration table, one-rack clusters;
# every schedule checked):
#   liquid-single-* (Fig. 18, the released topology_aware single-job cases): one 1 PS + 2
#     worker VGG-16, ResNet-50 or Inception-V3 job alone on 3 or 5 hosts × 4 K80; best-fit
#     (paper cost, with and without Alg. 1 line 18; code cost) vs random (10 seeds), spread,
#     pack; metric: execution time;
#   liquid-immediate (our multi-job extension): 20 jobs (4:2:2) arriving one by one (Poisson,
#     mean gap 60/120/240 s) on 5 hosts × 4 K80, without and with link contention between jobs;
#   liquid-batch (Fig. 19): 5/10/15/20 hosts × 2 T4 with 1.6 jobs per host all at once,
#     without and with link contention; batch mode (5 s) with the GGA (eq. 8, both cost forms)
#     and with best-fit (Liquid's released experiment), vs immediate best-fit, random, spread,
#     pack;
#   liquid-optimisations (§6 at cluster scale, our extension): 40 single-task jobs on 5 hosts
#     × 2 T4 (mean gap 10/20/40 s); Liquid with heartbeat-only reporting (5 s), then each
#     optimisation alone (paper gates, and sharing / pre-scheduling under the reference code's
#     load-ratio gates), then all three;
#   sequences (§6 in the paper's setting): job sequences on one GPU with 0/10/20 % prediction
#     error (benchmarks/liquid_sequences.py).
# Resumable (about 5 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
out=benchmarks/results/liquid
mkdir -p $out
singles=(liquid-single-vgg16 liquid-single-resnet50 liquid-single-inceptionv3)
for grid in "${singles[@]}" liquid-immediate liquid-batch liquid-optimisations; do
  [[ -f instances/$grid/manifest.json ]] ||
    optsched bench gen benchmarks/grids/$grid.json --out instances/$grid
done
run() {  # run SET PARAM... (method seeds: SEEDS, default 0)
  local set=$1; shift
  # shellcheck disable=SC2086
  optsched bench run instances/$set --method liquid "${@/#/--param=}" --workers 2 \
    --seeds ${SEEDS:-0} --records $out/records.jsonl
}
for set in "${singles[@]}"; do
  run "$set" placement=bestfit cost=paper
  run "$set" placement=bestfit cost=paper line18=1
  run "$set" placement=bestfit cost=code
  SEEDS="0 1 2 3 4 5 6 7 8 9" run "$set" placement=random
  run "$set" placement=spread
  run "$set" placement=pack
done
for cost in paper code; do
  run liquid-immediate placement=bestfit cost=$cost
  run liquid-batch placement=bestfit cost=$cost
  run liquid-batch placement=gga batch=5 cost=$cost
done
run liquid-immediate placement=bestfit cost=paper line18=1
for placement in random spread pack; do
  run liquid-immediate placement=$placement
  run liquid-batch placement=$placement
done
run liquid-batch placement=bestfit batch=5 cost=code
for flags in "heartbeat=5" "heartbeat=5 share=1" "heartbeat=5 preschedule=1" "heartbeat=0" \
             "heartbeat=5 share=1 gates=code" "heartbeat=5 preschedule=1 gates=code" \
             "heartbeat=0 share=1 preschedule=1"; do
  # shellcheck disable=SC2086
  run liquid-optimisations $flags
done
python benchmarks/liquid_summary.py $out > $out/summary.md
python benchmarks/liquid_sequences.py --out $out
