#!/usr/bin/env bash
# Measures what the console costs on a running fleet: it opens
# `ghostfleet console` in a detached 160x48 tmux terminal, lets it settle,
# then samples its CPU time and RSS from /proc over a window, and writes
# results/console-cost-<time>/cost.json with the fleet's size.
#
#   hack/console-cost.sh [SECONDS]      (default 120; fleet: $GHOSTFLEET_CLUSTER or ghostfleet)
set -euo pipefail
cd "$(dirname "$0")/.."
window=${1:-120}
settle=20
bin=bin/ghostfleet
go build -o "$bin" ./cmd/ghostfleet
status=$("$bin" status -o json)
session=gf-console-cost
tmux kill-session -t "$session" 2>/dev/null || true
tmux new-session -d -s "$session" -x 160 -y 48 "exec $PWD/$bin console"
trap 'tmux kill-session -t "$session" 2>/dev/null || true' EXIT
sleep "$settle"
pid=$(tmux list-panes -t "$session" -F '#{pane_pid}')
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
t0=$(ticks)
sleep "$window"
t1=$(ticks)
rss_kb=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
hwm_kb=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
hz=$(getconf CLK_TCK)
dir=results/console-cost-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$dir"
python3 - "$dir/cost.json" <<PY
import json, sys
st = json.loads('''$status''')
cpu = ($t1 - $t0) / $hz
json.dump({
    "terminal": "160x48 (tmux)", "settleSeconds": $settle, "windowSeconds": $window,
    "nodes": st["nodes"]["total"], "podsRunning": st["pods"]["running"], "podsPending": st["pods"]["pending"],
    "cpuSeconds": cpu, "cpuPercentOfCore": round(100 * cpu / $window, 2),
    "rssMiB": round($rss_kb / 1024, 1), "peakRssMiB": round($hwm_kb / 1024, 1),
}, open(sys.argv[1], "w"), indent=2)
PY
cat "$dir/cost.json"
