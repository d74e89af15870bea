#!/usr/bin/env bash
# Experiment C, fourth part (docs/experiment-design.md): where does the
# latency climb of a filling DRA fleet go? For each mode in MODES, on a
# fresh 1,000-node fleet under PROFILE (default: fast):
#   RUNS times: `binpack --fill 0.95 --seed 1`, and while it runs two CPU
#   profiles of every component (`ghostfleet pprof --duration WINDOW`),
#   one EARLY seconds after it starts (the fleet nearly empty) and one
#   LATE seconds after (the fleet about three quarters full); each
#   profile records the pods bound meanwhile, every component's CPU per
#   pod and the scheduler's CPU by plugin. Then a snapshot of the binpack
#   run, and the pods removed.
# Modes: extended (GPUs as an extended resource: the control), dra
# (DRA devices, claims from a template: binpack --claim count), dra-extended
# (DRA devices whose DeviceClass serves nvidia.com/gpu: --claim none).
#
#   hack/experiment-c-profile.sh [RUNS] [NODES]      (defaults: 3, 1000)
#   MODES="dra" EARLY=5 LATE=110 WINDOW=30 PROFILE=fast hack/experiment-c-profile.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
nodes=${2:-1000}
early=${EARLY:-5}
late=${LATE:-110}
window=${WINDOW:-30}
profile=${PROFILE:-fast}
. hack/lib.sh
gf_build
name=gf-exp-c
packer=
log=$(mktemp)
trap '[ -z "$packer" ] || kill "$packer" 2>/dev/null; rm -f "$log"; "$bin" --name "$name" clean >/dev/null 2>&1 || true' EXIT

for mode in ${MODES:-extended dra dra-extended}; do
	case $mode in
	extended) up_flags=(--gpu-model extended) binpack_flags=() ;;
	dra) up_flags=(--gpu-model dra) binpack_flags=(--claim count) ;;
	dra-extended) up_flags=(--gpu-model dra --dra-extended-resource) binpack_flags=(--claim none) ;;
	*) echo "hack/experiment-c-profile.sh: mode $mode: allowed are extended, dra, dra-extended" >&2; exit 2 ;;
	esac
	fresh_fleet "$profile" "$nodes" "${up_flags[@]}"
	for i in $(seq "$runs"); do
		echo "== $mode, run $i of $runs: binpack, profiled at ${early}s and ${late}s for ${window}s"
		"$bin" --name "$name" binpack --fill 0.95 --seed 1 "${binpack_flags[@]}" >"$log" 2>&1 &
		packer=$!
		sleep "$early"
		"$bin" --name "$name" pprof --duration "${window}s"
		sleep $((late - early - window))
		if kill -0 "$packer" 2>/dev/null; then
			"$bin" --name "$name" pprof --duration "${window}s"
		else
			echo "== binpack ended before ${late}s: no late profile"
		fi
		wait "$packer" || echo "== binpack failed (its record says why)"
		packer=
		cat "$log"
		snapshot_of "$log" || true
		"$bin" --name "$name" unload
	done
done
