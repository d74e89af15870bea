#!/usr/bin/env bash
# What sharding the kwok controllers changes (#18 item 2), side by side in
# one run on this machine: for each shard count K, a bare control plane
# (kwokctl's binary runtime from GhostFleet's cached binaries, no kwok
# controller of its own, so that attach's controllers are the only ones),
# `ghostfleet attach --kwok-shards K`, `ghostfleet nodes N` timed until all
# are Ready, then the CPU of every kwok shard, the apiserver and etcd read
# from /proc over an idle window (the heartbeats' cost) and peak RSS; the
# control plane is then deleted whole. Writes results/shard-bench-<time>/:
# bench.json, each K's logs and its attach and nodes run records.
#
#   hack/shard-bench.sh [NODES] [K ...]     (default 5000 1 2)
#   IDLE=60 hack/shard-bench.sh 1000 1 2 4
#
# Shards on one machine share its two cores: this measures what splitting
# the work costs or saves here, not what more machines would add.
set -euo pipefail
cd "$(dirname "$0")/.."
nodes=${1:-5000}
shift || true
shards=("${@:-1}")
[ $# -gt 0 ] || shards=(1 2)
idle=${IDLE:-60}
. hack/lib.sh
gf_build
gf_kwokctl
new_run_dir shard-bench
hz=$(getconf CLK_TCK)
name=gf-shard-bench
kc=$HOME/.kwok/clusters/$name/kubeconfig.yaml
state=""
cleanup() { # the control plane is thrown away whole: no detach (deleting 5,000 nodes one by one takes longer than the bench)
	if [ -n "$state" ]; then
		for f in "$state"/kwok-controller*.pid; do [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
		rm -rf "$state"
	fi
	"$kwokctl" --name "$name" delete cluster >/dev/null 2>&1 || true
}
trap cleanup EXIT
ticks() { # utime+stime of the pids given, in clock ticks
	local t=0 p
	for p in "$@"; do
		[ -r "/proc/$p/stat" ] && t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
	done
	echo "$t"
}
hwm() { awk '/^VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
echo "[" >"$dir/bench.json.tmp"
first=1
for k in "${shards[@]}"; do
	echo "== $k shard(s), $nodes nodes"
	cleanup
	bare_control_plane "$name" >"$dir/kwokctl-$k.log" 2>&1
	"$bin" attach --kubeconfig "$kc" --results-dir "$dir" --i-know-this-is-real --kwok-shards "$k" -o json >"$dir/attach-$k.json"
	state=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stateDir"])' "$dir/attach-$k.json")
	start=$(date +%s.%N)
	"$bin" nodes "$nodes" --kubeconfig "$kc" --results-dir "$dir" >"$dir/nodes-$k.log" 2>&1
	ready=$(python3 -c "import sys; print(round($(date +%s.%N) - $start, 1))")
	sleep 20 # leases settle into their rhythm
	kwoks=$(awk 1 "$state"/kwok-controller*.pid) # one a line: the files end without a newline
	api=$(cat "$HOME/.kwok/clusters/$name/pids/kube-apiserver.pid")
	etcd=$(cat "$HOME/.kwok/clusters/$name/pids/etcd.pid")
	declare -A before=()
	for p in $kwoks $api $etcd; do before[$p]=$(ticks "$p"); done
	sleep "$idle"
	per=""
	total_kwok=0
	for p in $kwoks; do
		c=$(python3 -c "print(round(($(ticks "$p") - ${before[$p]}) / $hz / $idle, 3))")
		per="$per{\"pid\": $p, \"cores\": $c, \"peakRssMiB\": $(($(hwm "$p") / 1024))},"
		total_kwok=$(python3 -c "print(round($total_kwok + $c, 3))")
	done
	api_c=$(python3 -c "print(round(($(ticks "$api") - ${before[$api]}) / $hz / $idle, 3))")
	etcd_c=$(python3 -c "print(round(($(ticks "$etcd") - ${before[$etcd]}) / $hz / $idle, 3))")
	[ $first = 1 ] || echo "," >>"$dir/bench.json.tmp"
	first=0
	cat >>"$dir/bench.json.tmp" <<JSON
{"shards": $k, "nodes": $nodes, "secondsToAllReady": $ready, "idleWindowSeconds": $idle,
 "idleCores": {"kwokTotal": $total_kwok, "kubeApiserver": $api_c, "etcd": $etcd_c},
 "kwokShards": [${per%,}],
 "peakRssMiB": {"kubeApiserver": $(($(hwm "$api") / 1024)), "etcd": $(($(hwm "$etcd") / 1024))}}
JSON
	"$bin" status --kubeconfig "$kc" >"$dir/status-$k.txt" 2>&1 || true
	unset before
	cleanup
done
echo "]" >>"$dir/bench.json.tmp"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); json.dump({"what": "kwok controllers sharded on one 2-core machine: time to all nodes Ready and idle heartbeat CPU", "runs": d}, open(sys.argv[2], "w"), indent=2)' "$dir/bench.json.tmp" "$dir/bench.json"
rm "$dir/bench.json.tmp"
cat "$dir/bench.json"
echo "written: $dir"
