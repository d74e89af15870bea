#!/usr/bin/env bash
# Experiment D held (docs/experiment-design.md): a churn rate inside the
# knee's range kept up for ten minutes, to see what a 60 s step cannot:
# whether every create still lands, APF's queues and etcd's growth. Each
# profile on a fresh fleet; each run writes results/churn-<time>/ and a
# snapshot of its window, results/snapshot-<time>/ (report.html).
#
#   hack/experiment-d-sustain.sh [RATE] [SECONDS] [PROFILES] [NODES]
#   (defaults: 50, 600, "default tuned", 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-50}
seconds=${2:-600}
profiles=${3:-default tuned}
nodes=${4:-1000}
. hack/lib.sh
gf_build
name=gf-exp-d
log=$(mktemp)
trap 'rm -f "$log"; "$bin" --name "$name" clean >/dev/null 2>&1 || true' EXIT
for profile in $profiles; do
	echo "== $profile: churn at $rate pods/s for $seconds s"
	fresh_fleet "$profile" "$nodes"
	"$bin" --name "$name" churn "$rate" "$seconds" 2>&1 | tee "$log" || echo "== churn failed (its run folder says why)"
	snapshot_of "$log" || true
done
