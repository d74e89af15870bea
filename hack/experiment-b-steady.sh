#!/usr/bin/env bash
# Experiment B's steady state (docs/experiment-design.md): on a 1,000-node
# fleet already holding 6,000 one-GPU pods (a burst, not judged), 2,000
# more at a paced 20 pods/s (open loop), judged against the pod startup
# SLO (p99 <= 5 s, sig-scalability pod_startup_latency.md). RUNS times per
# profile, one fresh fleet per profile, every pod removed between runs.
# Each paced run writes results/load-<time>/ and a snapshot of its window,
# results/snapshot-<time>/ (report.html).
#
#   hack/experiment-b-steady.sh [RUNS] [NODES] [PROFILES]
#   (defaults: 3, 1000, "default")
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
nodes=${2:-1000}
profiles=${3:-default}
. hack/lib.sh
gf_build
name=gf-exp-b
log=$(mktemp)
trap 'rm -f "$log"; "$bin" --name "$name" clean >/dev/null 2>&1 || true' EXIT
for profile in $profiles; do
	fresh_fleet "$profile" "$nodes"
	for i in $(seq "$runs"); do
		echo "== $profile, steady-state run $i of $runs: 6,000 pods first"
		"$bin" --name "$name" load 6000 1
		echo "== then 2,000 at 20 pods/s"
		"$bin" --name "$name" load 2000 1 --rate 20 --namespace gf-steady 2>&1 | tee "$log" || echo "== paced load failed (its run folder says why)"
		snapshot_of "$log" || true
		"$bin" --name "$name" unload
	done
done
