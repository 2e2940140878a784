#!/usr/bin/env bash
# Certified gaps at the Hare paper's scale (HPDC'22 Figs. 14-17: instances/hare-gpus, hare-jobs,
# hare-heterogeneity, hare-mix; 100-300 jobs on 100-180 GPUs, 3 seeds each), both modes.
# 1. Schedules and bounds that scale: ect; priority-search (30 s per run); the bounds
#    fluid-bound and capacity-bound (its LP on 100 intervals, up to 10 minutes; in gang mode on
#    hare-mix and hare-gpus also on 200 intervals).
#    priority-search runs with each decoder engine (Python and compiled), and in relaxed
#    mode also with fit=tight. Then priority-search with the paper's budget (10 minutes of
#    wall-clock time per instance) on three instances in relaxed mode, and with the compiled
#    decoder in gang mode on the nine hare-gpus instances of 100-140 GPUs (four of them also
#    with kicks) and in relaxed mode on six, and on all nine with fit=tight (six of them also
#    with kick=2). Last, priority-search with classes=lp (GPU types from the class-capacity
#    LP) for 150 s on every instance in relaxed mode, and for 10 minutes on three.
# 2. One gap table of every method at every setting, over these records and the online
#    benchmark's (benchmarks/hare_online.sh: Hare's offline heuristic and its variants, hlas,
#    allox and the gang baselines), against the best bound known for each instance and mode
#    (the sets' manifests; for gang mode the better of the gang and relaxed bounds).
# Two runs in parallel on the 2-core reference machine (three for the 10-minute relaxed runs);
# resumable (about 7 hours: 3 hours 45 for step 1, 10 minutes for the three long relaxed
# runs, 50 minutes for the nine long gang runs, 50 for the ten long runs after them, 40 for
# the nine long fit=tight runs, 30 for the six with kicks, 20 for the four on hare-mix, 50
# for the classes=lp runs and 20 for the three long ones).
set -euo pipefail
cd "$(dirname "$0")/.."
out=benchmarks/results/paper-scale
mkdir -p $out
sets=(hare-gpus hare-jobs hare-heterogeneity hare-mix)
for set in "${sets[@]}"; do
  [[ -f instances/$set/manifest.json ]] ||
    optsched bench gen benchmarks/grids/$set.json --out instances/$set
  optsched bench run instances/$set --method ect --method fluid-bound --mode relaxed --mode gang \
    --workers 2 --records $out/records.jsonl
  optsched bench run instances/$set --method capacity-bound --time-limit 600 --mode relaxed \
    --mode gang --workers 2 --records $out/records.jsonl
  # gang mode on hare-mix and hare-gpus, whose median gang gaps are nearest 5 % after the long
  # runs below: the LP on 200 intervals (340-540 s each with two runs in parallel)
  if [[ $set == hare-mix || $set == hare-gpus ]]; then
    optsched bench run instances/$set --method capacity-bound --time-limit 600 --mode gang \
      --param intervals=200 --workers 2 --records $out/records.jsonl
  fi
  optsched bench run instances/$set --method priority-search --time-limit 30 --mode relaxed \
    --mode gang --workers 2 --records $out/records.jsonl
  # the same with the compiled decoder (needs a C compiler): as many work-seconds, 18-49
  # times the moves
  optsched bench run instances/$set --method priority-search --time-limit 30 --mode relaxed \
    --mode gang --param engine=compiled --workers 2 --records $out/records.jsonl
  # relaxed mode with fit=tight (a round's tasks on the slowest idle GPUs that keep its pace)
  optsched bench run instances/$set --method priority-search --time-limit 30 --mode relaxed \
    --param engine=compiled --param fit=tight --workers 2 --records $out/records.jsonl
done
# the paper's 10-minute budget per instance (wall-clock: a work budget of 600 work-seconds of
# the Python decoder takes 15-25 minutes in gang mode at this scale), on one instance of each
# set whose gap is largest (in relaxed mode 10 minutes of the Python decoder lower the
# schedules' Σ w C by 0.2-0.7 %, in gang mode by 0.7-1.5 %)
for name in hare-gpus/hare-gpus-gpus100-s0 hare-jobs/hare-jobs-jobs300-s0 \
    hare-mix/hare-mix-mix1-1-1-2-s0; do
  optsched bench run instances/${name%%/*} --only "${name##*/}" --method priority-search \
    --time-limit 600 --budget wall --mode relaxed --workers 1 \
    --records "$out/long-${name%%/*}.jsonl" &
done
wait
# the compiled decoder for 10 minutes in gang mode on the hare-gpus instances whose gap after
# its 30-s runs is above 5 % (100-140 GPUs); the long-*-gang.jsonl files also hold 10-minute
# runs of the Python decoder on hare-mix, hare-jobs and hare-gpus (label `priority-search`)
optsched bench run instances/hare-gpus --only 'hare-gpus-gpus1[024]0-*' --method priority-search \
  --time-limit 600 --budget wall --mode gang --param engine=compiled --workers 2 \
  --records "$out/long-hare-gpus-gang.jsonl"
# kicks (kick=8) on four of them, and the compiled decoder for 10 minutes in relaxed mode on six
optsched bench run instances/hare-gpus --only 'hare-gpus-gpus1[24]0-s[02]' \
  --method priority-search --time-limit 600 --budget wall --mode gang --param engine=compiled \
  --param kick=8 --workers 2 --records "$out/long-hare-gpus-gang.jsonl"
optsched bench run instances/hare-gpus --only 'hare-gpus-gpus1[04]0-s1' --method priority-search \
  --time-limit 600 --budget wall --mode relaxed --param engine=compiled --workers 2 \
  --records "$out/long-hare-gpus.jsonl"
optsched bench run instances/hare-gpus --only 'hare-gpus-gpus1[24]0-s[02]' --method priority-search \
  --time-limit 600 --budget wall --mode relaxed --param engine=compiled --workers 2 \
  --records "$out/long-hare-gpus.jsonl"
# fit=tight for 10 minutes in relaxed mode on the nine hare-gpus instances of 100-140 GPUs
# (six of them side by side with the runs above)
optsched bench run instances/hare-gpus --only 'hare-gpus-gpus1[024]0-*' --method priority-search \
  --time-limit 600 --budget wall --mode relaxed --param engine=compiled --param fit=tight \
  --workers 2 --records "$out/long-hare-gpus.jsonl"
# and with small kicks (kick=2) on six of them
optsched bench run instances/hare-gpus --only 'hare-gpus-gpus1[024]0-s[12]' --method priority-search \
  --time-limit 600 --budget wall --mode relaxed --param engine=compiled --param fit=tight \
  --param kick=2 --workers 2 --records "$out/long-hare-gpus.jsonl"
# fit=tight for 10 minutes in relaxed mode on four hare-mix instances whose gap after the 30-s
# runs is at or above the set's median (each stopped at a local optimum after 157-350 s)
for only in 'hare-mix-mix2-1-1-1-s1' 'hare-mix-mix1-1-2-1-s[02]' 'hare-mix-mix1-2-1-1-s0'; do
  optsched bench run instances/hare-mix --only "$only" --method priority-search \
    --time-limit 600 --budget wall --mode relaxed --param engine=compiled --param fit=tight \
    --workers 1 --records "$out/long-hare-mix.jsonl"
done
# GPU types from the class-capacity LP (classes=lp: each job searched on the GPU types where
# the LP does at least half its work), 150 s of wall-clock time per instance, the LP included
for set in "${sets[@]}"; do
  optsched bench run instances/$set --method priority-search --time-limit 150 --budget wall \
    --mode relaxed --param engine=compiled --param fit=tight --param classes=lp --workers 2 \
    --records $out/lp-classes.jsonl
done
# and for 10 minutes with kick=2 on the three hare-gpus instances of 140 GPUs (the set's median)
optsched bench run instances/hare-gpus --only 'hare-gpus-gpus140-*' --method priority-search \
  --time-limit 600 --budget wall --mode relaxed --param engine=compiled --param fit=tight \
  --param classes=lp --param kick=2 --workers 2 --records "$out/long-hare-gpus.jsonl"
manifests=()
for set in "${sets[@]}"; do manifests+=(--manifest "instances/$set"); done
optsched bench report $out/records.jsonl $out/lp-classes.jsonl \
  benchmarks/results/online/settings.jsonl --out $out \
  "${manifests[@]}"
python benchmarks/paper_scale_summary.py "${sets[@]/#/instances/}" $out/records.jsonl \
  $out/lp-classes.jsonl benchmarks/results/online/settings.jsonl --long $out/long-*.jsonl \
  > $out/summary.md
