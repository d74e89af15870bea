#!/usr/bin/env bash
# Measures what the console costs on a running fleet: it opens the console
# (or CONSOLE_ARGS, e.g. a demo) in a detached 160x48 tmux terminal, lets it
# settle, then samples its CPU time and RSS from /proc every 5 s over a
# window, and writes results/console-cost-<time>/: cost.json (the fleet's
# size at start and end, CPU as a share of one core over the window and its
# busiest 30 s, RSS and peak RSS), samples.csv and the last frame.
#
#   hack/console-cost.sh [SECONDS]      (default 120; fleet: $GHOSTFLEET_CLUSTER or ghostfleet)
#   CONSOLE_ARGS="demo talk-5min --auto" hack/console-cost.sh 480
#   CONSOLE_BIN=/tmp/old/ghostfleet hack/console-cost.sh   # another build, side by side with this one
set -euo pipefail
cd "$(dirname "$0")/.."
window=${1:-120}
settle=${SETTLE:-20}
args=${CONSOLE_ARGS:-console}
bin=${CONSOLE_BIN:-$PWD/bin/ghostfleet}
[ -n "${CONSOLE_BIN:-}" ] || go build -o "$bin" ./cmd/ghostfleet
dir=${GHOSTFLEET_RESULTS:-results}/console-cost-$(date -u +%Y%m%d-%H%M%S)
while [ -e "$dir" ]; do dir=$dir-1; done # two runs started in the same second
mkdir -p "$dir"
"$bin" status -o json >"$dir/status-start.json"
tm() { tmux -L "gf-console-cost-$$" "$@"; } # one server per run: two can measure side by side
tm kill-server 2>/dev/null || true
# shellcheck disable=SC2086 # CONSOLE_ARGS is words on purpose
tm new-session -d -s cost -x 160 -y 48 "exec $bin $args 2>$dir/console.stderr"
tm set-option -t cost remain-on-exit on # a console that ends (a demo) or dies keeps its last frame
trap 'tm kill-server 2>/dev/null || true' EXIT
sleep "$settle"
pid=$(tm list-panes -t cost -F '#{pane_pid}')
echo "t,cpu_ticks,rss_kb" >"$dir/samples.csv"
end=$(($(date +%s) + window))
hwm_kb=0
while [ "$(date +%s)" -lt "$end" ] && [ -r "/proc/$pid/stat" ]; do
	cpu=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) || break
	rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null) || break
	[ -n "$rss" ] || break # a zombie has no memory left to count
	echo "$(date +%s),$cpu,$rss" >>"$dir/samples.csv"
	hwm_kb=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo "$hwm_kb")
	sleep 5
done
tm capture-pane -p -t cost >"$dir/frame-end.txt"
"$bin" status -o json >"$dir/status-end.json" || true
python3 - "$dir" "$(getconf CLK_TCK)" "$hwm_kb" "$settle" "$args" "$bin" <<'PY'
import csv, json, sys
d, hz, hwm, settle, args, binary = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
rows = [(int(r["t"]), int(r["cpu_ticks"]), int(r["rss_kb"])) for r in csv.DictReader(open(f"{d}/samples.csv"))]
span = rows[-1][0] - rows[0][0] or 1
cpu = (rows[-1][1] - rows[0][1]) / hz
busiest = max(((b[1] - a[1]) / hz / (b[0] - a[0]) for a in rows for b in rows if 25 <= b[0] - a[0] <= 35), default=cpu / span)
def size(f):
    st = json.load(open(f"{d}/{f}"))
    return {"nodes": st["nodes"]["total"], "podsRunning": st["pods"]["running"], "podsPending": st["pods"]["pending"]}
json.dump({
    "terminal": "160x48 (tmux)", "command": "ghostfleet " + args, "binary": binary, "settleSeconds": settle, "windowSeconds": span,
    "start": size("status-start.json"), "end": size("status-end.json"),
    "cpuSeconds": round(cpu, 2), "cpuPercentOfCore": round(100 * cpu / span, 2),
    "busiest30sPercentOfCore": round(100 * busiest, 2),
    "rssMiB": round(rows[-1][2] / 1024, 1), "peakRssMiB": round(hwm / 1024, 1),
}, open(f"{d}/cost.json", "w"), indent=2)
PY
cat "$dir/cost.json"
