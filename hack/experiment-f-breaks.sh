#!/usr/bin/env bash
# Experiment F, faults that end running workers (docs/experiment-design.md):
# on a fresh 1,000-node fleet per profile (`default`, then `gang`):
#   RUNS times: `train --jobs JOBS --hold HOLD` (8 whole-node workers per
#     job); once every job runs, `fault FAULT --nodes K --fail-pods --seed
#     i` ends the workers on K nodes (exit code 1, as a CUDA error ends a
#     worker), and CLEAR seconds later `fault clear --all` gives the nodes
#     back; train keeps watching until HOLD is over and reports the jobs
#     broken, their time to recover and the GPU-seconds their remaining
#     workers held meanwhile;
#   then once per seed in DOWN_SEEDS (default 1), unless DOWN is 0: the
#     same with `fault node-down --nodes DOWN --seed s` instead, no clear,
#     and a hold of DOWN_HOLD: the node lifecycle controller evicts the
#     workers after their 300 s toleration.
# RESTART=job has every train restart a job that loses a worker as a whole
# (train --restart job) instead of the Job controller replacing the one;
# RESTART_DELAY (e.g. 10s) has it wait that long between the old Job gone
# and the new one (train --restart-delay).
# TRACE (e.g. 30s) has every train take a Go execution trace of the
# apiserver over the hold's first TRACE (train --trace-apiserver), and
# ETCD_TRACE one of etcd (train --trace-etcd).
# Each train and fault writes its own results/ folder, and each train a
# snapshot of its window (results/snapshot-<time>/, report.html).
#
#   hack/experiment-f-breaks.sh [RUNS] [NODES]      (defaults: 3, 1000)
#   K=50 JOBS=120 HOLD=180 CLEAR=60 DOWN=20 DOWN_HOLD=480 PROFILES="default gang" \
#     FAULT="gpu-xid --xid 79" hack/experiment-f-breaks.sh
#   FAULT=nvlink DOWN=0 PROFILES=default hack/experiment-f-breaks.sh   (NVLink only)
#   DOWN_SEEDS="2 3" hack/experiment-f-breaks.sh 0          (node-down only)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
nodes=${2:-1000}
k=${K:-50}
jobs=${JOBS:-120}
hold=${HOLD:-180}
clear_after=${CLEAR:-60}
down=${DOWN:-20}
down_hold=${DOWN_HOLD:-480}
down_seeds=${DOWN_SEEDS:-1}
profiles=${PROFILES:-default gang}
read -r -a fault <<<"${FAULT:-gpu-xid --xid 79}"
restart=${RESTART:-worker}
restart_delay=${RESTART_DELAY:-0s}
trace=${TRACE:-0s}
etcd_trace=${ETCD_TRACE:-0s}
. hack/lib.sh
gf_build
name=gf-exp-f
trainer=
log=$(mktemp)
trap '[ -z "$trainer" ] || kill "$trainer" 2>/dev/null; rm -f "$log"; "$bin" --name "$name" clean >/dev/null 2>&1 || true' EXIT

# train_then HOLD CLEAR FAULT-ARGS...: starts train with hold HOLD
# seconds, injects the fault once every job runs, clears it after CLEAR
# seconds unless that is 0, and waits for train to end.
train_then() {
	local train_hold=$1 clear=$2
	shift 2
	# Emptied here, not only by the background train's redirection: that
	# may not have happened yet when the wait below first reads the log,
	# which would then find the previous run's line.
	: >"$log"
	"$bin" --name "$name" train --jobs "$jobs" --pods-per-job 8 --gpus-per-pod 8 --stall 0 --timeout 10m --hold "${train_hold}s" --restart "$restart" --restart-delay "$restart_delay" --trace-apiserver "$trace" --trace-etcd "$etcd_trace" >"$log" 2>&1 &
	trainer=$!
	until grep -q "watching the running jobs" "$log"; do
		if ! kill -0 "$trainer" 2>/dev/null; then
			cat "$log"
			echo "== train ended before every job ran (its record says why)"
			trainer=
			return 1
		fi
		sleep 1
	done
	echo "== every job runs: $*"
	"$bin" --name "$name" fault "$@"
	if [ "$clear" -gt 0 ]; then
		sleep "$clear"
		"$bin" --name "$name" fault clear --all
	fi
	wait "$trainer" || echo "== train failed (its record says why)"
	trainer=
	cat "$log"
	snapshot_of "$log" || true
}

for profile in $profiles; do
	fresh_fleet "$profile" "$nodes"
	for i in $(seq "$runs"); do
		echo "== $profile, run $i of $runs: $jobs jobs, then ${fault[*]} ending the workers on $k nodes, cleared after ${clear_after}s"
		train_then "$hold" "$clear_after" "${fault[@]}" --nodes "$k" --seed "$i" --fail-pods || true
		"$bin" --name "$name" fault clear --all >/dev/null 2>&1 || true
		"$bin" --name "$name" unload
	done
	[ "$down" -gt 0 ] || continue
	for seed in $down_seeds; do
		echo "== $profile, node-down seed $seed: $jobs jobs, then $down nodes down (evicted after the 300 s toleration)"
		train_then "$down_hold" 0 node-down --nodes "$down" --seed "$seed" || true
		"$bin" --name "$name" fault clear --all
		"$bin" --name "$name" unload
	done
done
