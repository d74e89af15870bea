#!/usr/bin/env bash
# Experiment F, twenty-ninth sitting (docs/experiment-design.md): is the
# speed probe every run records level on an idle machine, and what does a
# load on the other CPU do to it? No cluster: `ghostfleet probe` alone.
#
# Each round holds the probe to one CPU (CPU 0 in odd rounds, 1 in even
# ones) and runs three arms, each probe its own process of TRIALS trials
# per work, in an order that rotates by round:
#   idle:   nothing else on the machine, twice, back to back (idle, again);
#   spin:   beside a shell loop held to the other CPU (busy, little memory);
#   stream: beside `dd if=/dev/zero of=/dev/null bs=64M` held to the other
#           CPU (the kernel zero-fills dd's 64 MiB buffer over and over: a
#           write stream through the shared cache into memory, counted
#           mostly as system time).
# Each probe writes results/probe-<time>/, its arm in params.note. Run it on an otherwise idle
# machine: it stops if a GhostFleet fleet is up.
#
#   hack/experiment-host-probe.sh [ROUNDS]     (default 8; TRIALS=50)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-8}
trials=${TRIALS:-50}
[[ $rounds =~ ^[1-9][0-9]?$ ]] || { echo "ROUNDS \"$rounds\": allowed are 1-99" >&2; exit 2; }
command -v taskset >/dev/null || { echo "taskset (util-linux) is missing: apt-get install util-linux" >&2; exit 2; }
taskset -c 0 true 2>/dev/null && taskset -c 1 true 2>/dev/null || { echo "this shell may run on CPUs $(taskset -pc $$ | sed 's/.*: //'): the sitting holds the probe and its neighbour to CPUs 0 and 1" >&2; exit 2; }
. hack/lib.sh
gf_build
if up=$(ls "$HOME/.kwok/clusters" 2>/dev/null) && [ -n "$up" ]; then
	echo "== fleets are up ($up): the sitting wants an idle machine; clean them first (ghostfleet --name NAME clean)" >&2
	exit 1
fi

neighbour=
trap '[ -z "$neighbour" ] || kill "$neighbour" 2>/dev/null || true' EXIT

# beside CPU CMD…: starts CMD held to CPU in the background.
beside() {
	local cpu=$1
	shift
	taskset -c "$cpu" "$@" >/dev/null &
	neighbour=$!
	sleep 0.5 # under way before the probe starts
	kill -0 "$neighbour" 2>/dev/null || { echo "== the neighbour ($*) did not start on CPU $cpu: stopping" >&2; exit 1; }
}

# probe ARM: one probe, its arm and its neighbour in its record's note.
probe() {
	local note="$1: nothing else on the machine"
	[ -z "$neighbour" ] || note="$1: $2 held to CPU $other"
	echo "== round $r, $note; the probe on CPU $cpu"
	"$bin" probe --trials "$trials" --cpu "$cpu" --note "$note"
}

# quiet: ends the neighbour and lets the machine settle.
quiet() {
	if [ -n "$neighbour" ]; then
		kill "$neighbour"
		wait "$neighbour" 2>/dev/null || true
		neighbour=
	fi
	sleep 1
}

arms=(idle spin stream)
for r in $(seq "$rounds"); do
	cpu=$(((r + 1) % 2))
	other=$((1 - cpu))
	for i in 0 1 2; do
		case ${arms[$(((i + r - 1) % 3))]} in
		idle)
			probe idle
			probe again
			;;
		spin)
			beside "$other" sh -c 'while :; do :; done'
			probe spin "a shell loop"
			;;
		stream)
			beside "$other" dd if=/dev/zero of=/dev/null bs=64M
			probe stream "dd zero-filling a 64 MiB buffer over and over"
			;;
		esac
		quiet
	done
done
