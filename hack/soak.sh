#!/usr/bin/env bash
# One-hour soak (issue #16, item 6): a churn at a sustainable rate (20
# pods/s: the default profile's scheduler binds at most ~37 pods/s) for
# DURATION with the console attached in a detached 160x48 tmux terminal,
# sampling every EVERY seconds the CPU time and RSS (from /proc) of the
# console and of each component, and the console's goroutine count (from
# its --pprof-addr). Writes results/soak-<time>/: samples.csv, soak.json
# (the console's RSS growth from minute 5 to the end, goroutines at start
# and end, per component CPU and peak RSS, the churn's typed result),
# soak.svg (RSS over time), goroutine profiles and the console's last frame.
#
#   hack/soak.sh            (make soak)
#   DURATION=600 RATE=20 NODES=200 hack/soak.sh
#
# The fleet is GHOSTFLEET_CLUSTER (default gf-soak): brought up with NODES
# fake nodes if it is not up, and cleaned at the end if this script made it.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${GHOSTFLEET_CLUSTER:-gf-soak}
duration=${DURATION:-3600}
rate=${RATE:-20}
lifetime=${LIFETIME:-60s}
nodes=${NODES:-1000}
every=${EVERY:-10}
prom_port=${PROM_PORT:-9390}
pprof_port=${PPROF_PORT:-9391}
bin=$PWD/bin/ghostfleet
go build -o "$bin" ./cmd/ghostfleet
out=${GHOSTFLEET_RESULTS:-results}/soak-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$out"
tm() { tmux -L gf-soak "$@"; }

made=
if ! "$bin" status --name "$name" >/dev/null 2>&1; then
	"$bin" up --name "$name" --nodes "$nodes" --prometheus-port "$prom_port"
	made=1
fi
cleanup() {
	tm kill-server 2>/dev/null || true
	[ -n "${churn:-}" ] && kill -INT "$churn" 2>/dev/null && wait "$churn" || true
	if [ -n "$made" ]; then "$bin" clean --name "$name" >/dev/null || true; fi
}
trap cleanup EXIT
tm kill-server 2>/dev/null || true
# The pane stays after the console exits, and its stderr is kept: a
# console that dies leaves its last words in the folder.
tm new-session -d -s soak -x 160 -y 48 \
	"GHOSTFLEET_RESULTS=$out/console-runs exec $bin console --name $name --pprof-addr 127.0.0.1:$pprof_port 2>$out/console.stderr"
tm set-option -t soak remain-on-exit on
sleep 15
console=$(tm list-panes -t soak -F '#{pane_pid}')
if ! kill -0 "$console" 2>/dev/null || [ "$(tm list-panes -t soak -F '#{pane_dead}')" = 1 ]; then
	echo "the console did not start: $(cat "$out/console.stderr")" >&2
	exit 1
fi
goroutines() { curl -fsS "http://127.0.0.1:$pprof_port/debug/pprof/goroutine?debug=1" | awk 'NR==1 {print $4}'; }
curl -fsS "http://127.0.0.1:$pprof_port/debug/pprof/goroutine?debug=1" >"$out/goroutines-start.txt"
"$bin" status --name "$name" -o json >"$out/status-start.json" || true

pids=~/.kwok/clusters/$name/pids
procs=(console)
for f in "$pids"/*.pid; do procs+=("$(basename "$f" .pid)"); done
pidof() { if [ "$1" = console ]; then echo "$console"; else cat "$pids/$1.pid"; fi; }
{
	printf 't'
	for p in "${procs[@]}"; do printf ',%s_cpu_ticks,%s_rss_kb' "$p" "$p"; done
	printf ',console_goroutines\n'
} >"$out/samples.csv"
sample() {
	local p pid
	printf '%s' "$(date +%s)"
	for p in "${procs[@]}"; do
		pid=$(pidof "$p")
		if [ -r "/proc/$pid/stat" ]; then
			printf ',%s,%s' "$(awk '{print $14 + $15}' "/proc/$pid/stat")" "$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")"
		else
			printf ',,'
		fi
	done
	printf ',%s\n' "$(goroutines || true)"
}

echo "soak: churn $rate pods/s (lifetime $lifetime) for ${duration}s on $name; console in tmux -L gf-soak; sampling every ${every}s into $out"
"$bin" churn "$rate" "${duration}s" --lifetime "$lifetime" --name "$name" -o json >"$out/churn.json" 2>"$out/churn.log" &
churn=$!
while kill -0 "$churn" 2>/dev/null; do
	sample >>"$out/samples.csv"
	sleep "$every"
done
# A churn whose clean-up after the hour failed still has its figures: only
# a churn that wrote no result stops the summary.
wait "$churn" || echo "churn exited $?: see $out/churn.log" >&2
[ -s "$out/churn.json" ] || { echo "the churn wrote no result: see $out/churn.log" >&2; exit 1; }
churn=
sample >>"$out/samples.csv"
curl -fsS "http://127.0.0.1:$pprof_port/debug/pprof/goroutine?debug=1" >"$out/goroutines-end.txt"
tm capture-pane -p -t soak >"$out/frame-end.txt"
alive=true
[ "$(tm list-panes -t soak -F '#{pane_dead}')" = 1 ] && alive=false
python3 hack/soak_summary.py "$out" "$(getconf CLK_TCK)" "$alive"
