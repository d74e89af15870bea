#!/usr/bin/env bash
# Experiment F (docs/experiment-design.md): GPU faults and training jobs,
# without and with gang scheduling. On a fresh 1,000-node fleet per
# profile (`default`, then `gang`: the default profile plus
# kube-scheduler's gang scheduling), RUNS times:
#   1. `fault gpu-xid --nodes K --xid 79` takes K nodes out (tainted
#      nvidia.com/gpu-health, one GPU less), chosen by seed i;
#   2. `train --jobs JOBS` (8 pods × 8 GPUs each) needs more whole nodes
#      than the healthy ones hold;
#   3. once the fleet has settled (no GPU allocated or freed for SETTLE
#      seconds, by `status`), `fault clear --all` recovers the nodes;
#      train runs until every job runs (--stall 0), so its duration
#      includes the recovery, and its GPU-seconds held by partly started
#      jobs are what the fault cost.
# Each train and fault writes its own results/ folder (the clear's
# record says when the recovery began), and each train a snapshot of its
# window (results/snapshot-<time>/, report.html).
#
#   hack/experiment-f.sh [RUNS] [NODES]      (defaults: 3, 1000)
#   K=50 JOBS=120 SETTLE=30 hack/experiment-f.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
nodes=${2:-1000}
k=${K:-50}
jobs=${JOBS:-120}
settle=${SETTLE:-30}
. hack/lib.sh
gf_build
name=gf-exp-f
clearer=
log=$(mktemp)
trap '[ -z "$clearer" ] || kill "$clearer" 2>/dev/null; rm -f "$log"; "$bin" --name "$name" clean >/dev/null 2>&1 || true' EXIT
# clear_when_settled: clears every fault once the fleet's allocated GPUs
# have not changed for $settle seconds (and some are allocated); a
# status that fails counts as no reading, never as settled.
clear_when_settled() {
	local last=-1 same=0 now
	while [ "$same" -lt "$settle" ]; do
		sleep 5
		now=$("$bin" --name "$name" status -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["gpus"]["allocated"])') || now=-2
		if [ "$now" = "$last" ] && [ "$now" != 0 ] && [ "$now" != -2 ]; then same=$((same + 5)); else same=0; fi
		last=$now
	done
	echo "== settled at $now GPUs allocated: clearing"
	"$bin" --name "$name" fault clear --all || { echo "== fault clear failed: the nodes stay faulted" >&2; return 1; }
}
for profile in default gang; do
	fresh_fleet "$profile" "$nodes"
	for i in $(seq "$runs"); do
		echo "== $profile, run $i of $runs: Xid 79 on $k nodes, $jobs jobs, cleared once settled for ${settle}s"
		"$bin" --name "$name" fault gpu-xid --nodes "$k" --xid 79 --seed "$i"
		clear_when_settled &
		clearer=$!
		# train ends when every job runs, which needs the clear; if it
		# fails or times out first, stop the clearer and clear here.
		if "$bin" --name "$name" train --jobs "$jobs" --pods-per-job 8 --gpus-per-pod 8 --stall 0 --timeout 10m 2>&1 | tee "$log"; then
			wait "$clearer" || true
			snapshot_of "$log" || true
		else
			echo "== train did not finish (its record says why): clearing"
			kill "$clearer" 2>/dev/null || true
			wait "$clearer" 2>/dev/null || true
			"$bin" --name "$name" fault clear --all
		fi
		clearer=
		"$bin" --name "$name" unload
	done
done
