#!/usr/bin/env bash
# Certified regret on loaded windows of the Philly trace: the jobs arriving on one day (days
# 20, 40, 60, 80 and 100 after the first arrival, a rule fixed before the others were measured;
# day 80 had been measured alone) on about a hundredth of the README's cluster (V100:10,
# T4:5, K80:3, M60:2: 20 GPUs), where queues form within the day. Four relaxed-mode policies
# (srtf:placement=paced, srtf, hlas, allox), each regret over the bound of --bound capacity
# (the class-capacity LP) and of --bound lagrangian (the LP, then the Lagrangian bound from
# its prices), 300 s each; at the lagrangian level also a priority-search schedule of the
# window, every arrival known (with kick=2: restarts until 120 s), which bounds the optimum
# from above. Then day 80 again at the lagrangian level on 1.5 and 2 times the cluster (31 and
# 40 GPUs), to see from which load on the bound certifies the best policy within 10 %. Two
# runs at a time on the 2-core reference machine (about 30 minutes), in the project's
# environment (`optsched` on PATH). Then the tables:
#   python benchmarks/regret_windows.py benchmarks/results/online/windows > \
#     benchmarks/results/online/windows.md
set -euo pipefail
cd "$(dirname "$0")/.."
trace=../shared/peer-data/pollux/traces/philly.csv
out=benchmarks/results/online/windows
mkdir -p $out
# day, cluster, bound level, file: the lagrangian level also with the best offline schedule
# priority-search finds in 120 s
run() {
  offline=()
  [[ $3 == lagrangian ]] && offline=(--offline priority-search:kick=2 --offline-time-limit 120)
  optsched compare "$trace" --cluster "$2" --window "${1}d:$(($1 + 1))d" \
    --policy srtf:placement=paced --policy srtf --policy hlas --policy allox \
    --bound "$3" --bound-time-limit 300 "${offline[@]}" --out "$out/$4" > /dev/null
}
window() {
  for bound in capacity lagrangian; do
    run "$1" V100:10,T4:5,K80:3,M60:2 $bound "day$1-$bound.json"
  done
}
for pair in "20 40" "60 80" "100"; do
  for day in $pair; do window "$day" & done
  wait
done
run 80 V100:15,T4:8,K80:5,M60:3 lagrangian day80-c31-lagrangian.json &
run 80 V100:20,T4:10,K80:6,M60:4 lagrangian day80-c40-lagrangian.json &
wait
