#!/usr/bin/env bash
# Experiment F, twenty-fifth part (docs/experiment-design.md): what a gang
# waiting for capacity costs the other work sent meanwhile. On one fresh
# fleet of NODES under PROFILE (the built-in gang profile), RUNS pairs of
# arms, their order alternating (control first in odd pairs):
#   control: FILL 8-GPU pods take as many nodes (`load FILL 8`; none by
#     default), one more 8-GPU pod takes a node (`load 1 8`), WAIT passes, then a
#     steady stream of 1-GPU pods (`load STREAM 1 --rate RATE`: the pod
#     startup SLO's kind of run);
#   gang: the same pods, then one job of NODES − FILL whole-node workers
#     (`train --jobs 1 --pods-per-job NODES-FILL --gpus-per-pod 8`), gang
#     scheduled (its PodGroup's minCount is the job's size): one node
#     short, it cannot start; train gives up after WAIT and leaves it
#     waiting; then the same stream.
# `unload` ends each arm; the fleet is deleted at the end. Each load and
# train writes its own results/ folder, and each stream a snapshot of its
# window (report.html).
#
#   hack/experiment-f-gang-queue.sh [RUNS] [NODES]      (defaults: 3, 1000)
#   STREAM=1200 RATE=10 WAIT=120 FILL=0 PROFILE=gang hack/experiment-f-gang-queue.sh
#   FILL=900 STREAM=450 WAIT=45 hack/experiment-f-gang-queue.sh   (a gang of 100)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
nodes=${2:-1000}
stream=${STREAM:-1200}
rate=${RATE:-10}
wait_s=${WAIT:-120}
fill=${FILL:-0}
gang=$((nodes - fill))
profile=${PROFILE:-gang}
. hack/lib.sh
gf_build
name=gf-exp-f
log=$(mktemp)
trap 'rm -f "$log"; "$bin" --name "$name" clean >/dev/null 2>&1 || true' EXIT

# arm control|gang: one arm, from an unloaded fleet back to one.
arm() {
	if [ "$fill" -gt 0 ]; then
		echo "== $1: $fill 8-GPU pods take as many nodes"
		"$bin" --name "$name" load "$fill" 8 --namespace gf-exp-fill
	fi
	echo "== $1: one 8-GPU pod takes a node"
	"$bin" --name "$name" load 1 8 --namespace gf-exp-held
	if [ "$1" = gang ]; then
		echo "== gang: one job of $gang whole-node workers, waiting (train gives up after ${wait_s}s and leaves it)"
		# train ends at its timeout with the job left waiting (exit 0);
		# anything else means the arm is not what it says.
		"$bin" --name "$name" train --jobs 1 --pods-per-job "$gang" --gpus-per-pod 8 --gang on --stall 0 --timeout "${wait_s}s" | tee "$log"
		grep -q "jobs fully running 0, partly 0, not at all 1$" "$log" || {
			echo "== the gang is not waiting whole (see train's output above): stopping"
			exit 1
		}
	else
		echo "== control: ${wait_s}s with nothing waiting"
		sleep "$wait_s"
	fi
	echo "== $1: $stream 1-GPU pods at $rate pods/s"
	"$bin" --name "$name" load "$stream" 1 --rate "$rate" --namespace gf-exp-stream 2>&1 | tee "$log" || echo "== the stream's load failed (its record says why)"
	snapshot_of "$log" || true
	"$bin" --name "$name" unload
}

fresh_fleet "$profile" "$nodes"
for i in $(seq "$runs"); do
	echo "== pair $i of $runs"
	if [ $((i % 2)) -eq 1 ]; then
		arm control
		arm gang
	else
		arm gang
		arm control
	fi
done
