#!/usr/bin/env bash
# Chaos under load (issue #16): for each component of a GhostFleet fleet in
# turn, run a churn, SIGKILL the component mid-churn, see how long until
# `ghostfleet status` says it is down, keep it down for DOWN seconds, bring
# it back with `ghostfleet restart`, and record what the churn lost (its
# errors by kind, from its typed -o json result) and whether a snapshot
# over the window is still written. The console watches throughout (in a
# detached 160x48 tmux terminal): the report says when its header first
# showed the component DOWN and when it cleared, and whether the console
# was still up at the end. Writes results/chaos-<time>/chaos.json.
#
#   hack/chaos.sh [COMPONENT…]      (default: all six, one after another)
#   GHOSTFLEET_CLUSTER=name RATE=20 DOWN=10 hack/chaos.sh
set -euo pipefail
cd "$(dirname "$0")/.."
name=${GHOSTFLEET_CLUSTER:-ghostfleet}
rate=${RATE:-20}
down=${DOWN:-10}
components=("$@")
if [ ${#components[@]} -eq 0 ]; then
	components=(kube-apiserver etcd kube-scheduler kube-controller-manager kwok-controller prometheus)
fi
bin=bin/ghostfleet
go build -o "$bin" ./cmd/ghostfleet
out=${GHOSTFLEET_RESULTS:-results}/chaos-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$out"
pids=~/.kwok/clusters/$name/pids
now() { date +%s.%N; }
tm() { tmux -L gf-chaos "$@"; }
tm kill-server 2>/dev/null || true
# The pane stays if the console exits, with its stderr kept in the folder.
tm new-session -d -s chaos -x 160 -y 48 "GHOSTFLEET_RESULTS=$out/console-runs exec $PWD/$bin console --name $name 2>$out/console.stderr"
tm set-option -t chaos remain-on-exit on
trap 'tm kill-server 2>/dev/null || true' EXIT
sleep 10
console=$(tm list-panes -t chaos -F '#{pane_pid}')
header() { tm capture-pane -p -t chaos | head -1; }
# console_sees COMPONENT yes|no: seconds since $t0 until the console's
# header does (yes) or does not (no) say COMPONENT is down; -1 after 60 s.
console_sees() {
	local deadline=$(($(date +%s) + 60))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		if header | grep -q "DOWN:.*$1"; then [ "$2" = yes ] && break; else [ "$2" = no ] && break; fi
		sleep 0.2
	done
	if [ "$(date +%s)" -ge "$deadline" ]; then echo -1; else python3 -c "print(round($(now) - $t0, 2))"; fi
}
statusjson() { # status exits non-zero while a component is down: that is no error here
	"$bin" status --name "$name" -o json 2>/dev/null || true
}
down() { # the components `ghostfleet status` says are not running
	statusjson | python3 -c '
import json, sys
print(" ".join(x["name"] for x in json.load(sys.stdin)["components"] if not x["running"]))'
}
running() { # is COMPONENT running, as `ghostfleet status` sees it?
	statusjson | python3 -c '
import json, sys
c = {x["name"]: x for x in json.load(sys.stdin)["components"]}
sys.exit(0 if c.get(sys.argv[1], {}).get("running") else 1)' "$1"
}

bring_back() { # restart what is down; note it on the last step's row
	local collateral d
	collateral=$(down)
	[ -n "$collateral" ] || return 0
	for d in $collateral; do
		echo "   $d is down too (collateral): restarting it"
		"$bin" restart "$d" --name "$name" -o json >"$out/restart-collateral-$d-$1.json"
	done
	[ -f "$out/chaos.json" ] || return 0
	python3 - "$out/chaos.json" "$collateral" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
rows[-1]["collateral"] = sys.argv[2].split()
json.dump(rows, open(sys.argv[1], "w"), indent=2)
PY
}

for c in "${components[@]}"; do
	# A kill can take others down with it (the scheduler and the
	# controller-manager exit when they lose their leader lease): bring
	# them back first, as the previous step's collateral.
	bring_back "before-$c"
	echo "== $c: churn $rate pods/s for $((down + 50))s, SIGKILL at 15s, down ${down}s, restart"
	"$bin" churn "$rate" "$((down + 50))s" --name "$name" -o json >"$out/churn-$c.json" 2>"$out/churn-$c.log" &
	churn=$!
	sleep 15
	t0=$(now)
	kill -9 "$(cat "$pids/$c.pid")"
	while running "$c"; do sleep 0.2; done
	detect=$(python3 -c "print(round($(now) - $t0, 2))")
	console_down=$(console_sees "$c" yes)
	sleep "$down"
	"$bin" restart "$c" --name "$name" -o json >"$out/restart-$c.json"
	back=$(python3 -c "print(round($(now) - $t0, 2))")
	console_back=$(console_sees "$c" no)
	wait "$churn" || echo "   churn exited $? (see $out/churn-$c.log)"
	snap=written
	"$bin" snapshot --since 2m --name "$name" >"$out/snapshot-$c.txt" 2>&1 || { snap=failed; echo "   snapshot failed (see $out/snapshot-$c.txt)"; }
	echo "   detected down after ${detect}s, answering again ${back}s after the kill"
	alive=true
	[ "$(tm list-panes -t chaos -F '#{pane_dead}')" = 1 ] && alive=false
	tm capture-pane -p -t chaos >"$out/console-after-$c.txt"
	python3 - "$out" "$c" "$detect" "$back" "$snap" "$console_down" "$console_back" "$alive" <<'PY'
import json, os, sys
out, c, detect, back, snap = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
console_down, console_back, alive = float(sys.argv[6]), float(sys.argv[7]), sys.argv[8] == "true"
def load(f):
    try:
        return json.load(open(os.path.join(out, f)))
    except Exception as e:
        return {"error": str(e)}
churn, restart = load(f"churn-{c}.json"), load(f"restart-{c}.json")
row = {
    "component": c, "detectSeconds": detect, "backSeconds": back,
    "restartSeconds": restart.get("seconds"), "restartOutcome": restart.get("outcome"),
    "churnOutcome": churn.get("outcome"), "churnRun": os.path.basename(churn.get("dir") or ""),
    "restartRun": os.path.basename(restart.get("dir") or ""),
    "created": churn.get("created"), "createSlots": (churn.get("attempted") or {}).get("create"),
    "createRatio": churn.get("createRatio"), "errors": churn.get("errors"),
    "snapshot": snap,
    # When the console's header said DOWN, and when it cleared, in seconds
    # after the kill (-1: not within 60 s); whether it was still up.
    "consoleShowedDownSeconds": console_down, "consoleClearedSeconds": console_back, "consoleAlive": alive,
}
path = os.path.join(out, "chaos.json")
rows = json.load(open(path)) if os.path.exists(path) else []
rows.append(row)
json.dump(rows, open(path, "w"), indent=2)
print("   ", json.dumps({k: row[k] for k in ("createRatio", "errors", "snapshot", "consoleShowedDownSeconds", "consoleClearedSeconds", "consoleAlive")}))
PY
done
bring_back after
echo "chaos report: $out/chaos.json"
