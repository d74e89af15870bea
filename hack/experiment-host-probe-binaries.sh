#!/usr/bin/env bash
# Experiment F, thirty-first sitting (docs/experiment-design.md): does a
# command's start probe sit at a level set by its binary? Two builds of
# GhostFleet, this checkout's and REV's, run the same commands on one
# fresh fleet, alternating within each round (the order swaps by round):
#   load 8 8, then train 1 job of 8 whole-node workers (gang on, quota
#   admission by suspend, as the twenty-eighth sitting's trains), then
#   unload; then this checkout's `probe --trials 20` as the machine's
#   reference.
# Every run writes its own results/ folder as usual; the sitting's folder,
# results/binaries-<time>/, holds sitting.json naming the two builds and
# which runs each made.
#
#   hack/experiment-host-probe-binaries.sh [ROUNDS] [NODES]   (defaults: 4, 1000)
#   REV=48ea46b PROFILE=scenarios/profiles/lever-cm-sched-burst2000-audit-gang.yaml
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-4}
nodes=${2:-1000}
rev=${REV:-48ea46b}
profile=${PROFILE:-scenarios/profiles/lever-cm-sched-burst2000-audit-gang.yaml}
[[ $rounds =~ ^[1-9][0-9]?$ ]] || { echo "ROUNDS \"$rounds\": allowed are 1-99" >&2; exit 2; }
git rev-parse --verify --quiet "$rev^{commit}" >/dev/null || { echo "REV \"$rev\" is not a commit of this repository" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is missing (it writes the sitting's index): apt-get install python3" >&2; exit 2; }
git diff --quiet HEAD -- '*.go' go.mod go.sum || { echo "this checkout has Go changes not committed: its build would not be $(git rev-parse --short=7 HEAD)'s; commit them first" >&2; exit 2; }
. hack/lib.sh
gf_build
here=$(git rev-parse --short=7 HEAD)
old=$(git rev-parse --short=7 "$rev")
[ "$here" != "$old" ] || { echo "REV $rev is this checkout's own commit: nothing to compare" >&2; exit 2; }
name=gf-exp-bin
work=$(mktemp -d)
dir=

# index: writes the sitting's sitting.json from the runs noted so far
# (each round's, and an aborted sitting's too).
index() {
	[ -n "$dir" ] || return 0
	python3 - "$dir" "$here" "$(git rev-parse HEAD)" "$old" "$(git rev-parse "$rev")" "$rounds" "$nodes" "$profile" <<'PY'
import json, sys
d, here, here_full, old, old_full, rounds, nodes, profile = sys.argv[1:]
runs = {here: [], old: [], "reference": []}
for line in open(d + "/runs.txt"):
    b, run = line.split()
    runs["reference" if run.startswith("probe-") else b].append(run)
json.dump({"builds": {here: {"commit": here_full, "is": "this checkout", "runs": runs[here]},
                      old: {"commit": old_full, "is": "REV", "runs": runs[old]}},
           "referenceProbes": runs["reference"],
           "rounds": int(rounds), "nodes": int(nodes), "profile": profile},
          open(d + "/sitting.json", "w"), indent=2)
PY
}
trap 'index || true; [ -z "$dir" ] || rm -f "$dir/runs.txt"; git worktree remove --force "$work/src" >/dev/null 2>&1 || true; rm -rf "$work"; "$bin" --name "$name" clean >/dev/null 2>&1 || true' EXIT
echo "== building $old (REV $rev) beside this checkout's $here"
git worktree add --detach "$work/src" "$rev" >/dev/null
make -s -C "$work/src" build BIN="$work/ghostfleet-$old"

new_run_dir binaries
: >"$dir/runs.txt"
declare -A build=([$here]=$bin [$old]=$work/ghostfleet-$old)

# gf BUILD ARGS…: runs a command of BUILD, noting the run folder it wrote
# (a failed run's too), and returns its exit code.
gf() {
	local b=$1 out rc=0
	shift
	out=$(mktemp)
	"${build[$b]}" --name "$name" "$@" 2>"$out" || rc=$?
	cat "$out" >&2 # its progress and errors, once it is done
	sed -n "s|^run record: .*/\(.*\)$|$b \1|p" "$out" >>"$dir/runs.txt"
	rm -f "$out"
	return "$rc"
}

fresh_fleet "$profile" "$nodes"
for r in $(seq "$rounds"); do
	order=("$here" "$old")
	[ $((r % 2)) = 1 ] || order=("$old" "$here")
	for b in "${order[@]}"; do
		echo "== round $r, build $b: load, train, unload"
		gf "$b" load 8 8 --namespace gf-exp-bin || echo "== round $r, build $b: the load failed (its record says why)"
		gf "$b" train --jobs 1 --pods-per-job 8 --gpus-per-pod 8 --gang on --admission quota --admit-by suspend --stall 0 --timeout 300s ||
			echo "== round $r, build $b: the train failed (its record says why)"
		gf "$b" unload
	done
	echo "== round $r: the machine's reference probe"
	gf "$here" probe --trials 20 --note "round $r: the machine's reference, after both builds' runs"
	index
done
echo "== the sitting: $dir/sitting.json"
