#!/usr/bin/env bash
# Experiment E (docs/experiment-design.md): the real ClusterLoader2's
# density test (scenarios/density, 4 one-GPU pods per node, then one
# latency pod per node) on 1,000 nodes, RUNS times under `default` and
# RUNS times under `tuned`, one fresh fleet per profile. Each run writes
# its own results/cl2-<time>/ folder, and a snapshot of its window
# results/snapshot-<time>/ (report.html). clusterloader is built from a
# perf-tests checkout (docs/cl2.md), never committed: pass its path.
#
#   GHOSTFLEET_CL2=/path/to/clusterloader hack/experiment-e.sh [RUNS] [NODES] [PROFILES]
#   (defaults: 3, 1000, "default tuned")
set -euo pipefail
cd "$(dirname "$0")/.."
cl2=${GHOSTFLEET_CL2:?set GHOSTFLEET_CL2 to a clusterloader binary built from perf-tests (docs/cl2.md)}
runs=${1:-3}
nodes=${2:-1000}
profiles=${3:-default tuned}
. hack/lib.sh
gf_build
name=gf-exp-e
log=$(mktemp)
trap 'rm -f "$log"; "$bin" --name "$name" clean >/dev/null 2>&1 || true' EXIT
for profile in $profiles; do
	fresh_fleet "$profile" "$nodes"
	for i in $(seq "$runs"); do
		echo "== $profile, CL2 run $i of $runs"
		"$bin" --name "$name" cl2 --binary "$cl2" 2>&1 | tee "$log" || echo "== CL2 run $i failed (its run folder says why)"
		snapshot_of "$log" || true
		"$bin" --name "$name" unload
	done
done
