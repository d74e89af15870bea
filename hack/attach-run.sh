#!/usr/bin/env bash
# Attach's whole user path as one committed run (#18 item 5), on a second
# control plane standing in for a "remote" cluster: kwokctl's binary
# runtime from GhostFleet's cached binaries, other ports, no kwok
# controller of its own (what attach meets on any cluster). Steps:
#   1. every listable kind counted (kubectl api-resources), before attach;
#   2. attach --kwok-shards 2 --remote-shards 1, and shard 2 run by
#      `ghostfleet kwok-shard` in its own process, as another machine would;
#   3. nodes N (default 200) until all Ready, through both shards;
#   4. load (2 one-GPU pods per node), a gpu-xid fault on 5 nodes, cleared;
#   5. a snapshot of the window (direct scrape: the cluster has no
#      Prometheus; its scheduler, controller-manager and etcd are hidden);
#   6. detach, the remote shard stopped (Ctrl-C), every kind counted again.
# Writes results/attach-run-<time>/: summary.json (each step's seconds and
# exit code, the counts before and after by kind, the kinds that differ),
# every command's output and the run folders the commands wrote.
#
#   hack/attach-run.sh [NODES]          (needs kubectl: apt-get install kubectl)
set -euo pipefail
cd "$(dirname "$0")/.."
nodes=${1:-200}
command -v kubectl >/dev/null || { echo "hack/attach-run.sh needs kubectl to count objects: apt-get install kubectl" >&2; exit 2; }
. hack/lib.sh
gf_build
gf_kwokctl
new_run_dir attach-run
name=gf-attach-run
kc=$HOME/.kwok/clusters/$name/kubeconfig.yaml
shard_pid=""
cleanup() {
	[ -z "$shard_pid" ] || kill "$shard_pid" 2>/dev/null || true
	"$bin" detach --kubeconfig "$kc" --results-dir "$dir" >/dev/null 2>&1 || true
	"$kwokctl" --name "$name" delete cluster >/dev/null 2>&1 || true
}
trap cleanup EXIT
"$kwokctl" --name "$name" delete cluster >/dev/null 2>&1 || true

count() { # every listable kind and how many objects it has, as JSON
	local out=$1 r n
	echo "{" >"$out"
	local first=1
	for r in $(kubectl --kubeconfig "$kc" api-resources --verbs=list -o name | sort); do
		n=$(kubectl --kubeconfig "$kc" get "$r" -A --no-headers --ignore-not-found 2>/dev/null | wc -l)
		[ $first = 1 ] || echo "," >>"$out"
		first=0
		printf '  "%s": %d' "$r" "$n" >>"$out"
	done
	printf '\n}\n' >>"$out"
}
steps=()
step() { # step NAME CMD...: runs it, its output in NAME.log, its seconds and exit code recorded
	local what=$1 t0 rc=0
	shift
	echo "== $what"
	t0=$(date +%s.%N)
	"$@" >"$dir/$what.log" 2>&1 || rc=$?
	steps+=("{\"step\": \"$what\", \"seconds\": $(python3 -c "print(round($(date +%s.%N) - $t0, 1))"), \"exit\": $rc}")
	tail -3 "$dir/$what.log" # a failed step is recorded, and the rest still runs so detach cleans up
}
gf() { "$bin" "$@" --kubeconfig "$kc" --results-dir "$dir"; }

step control-plane bare_control_plane "$name"
sleep 10 # the controller-manager's first writes (default ServiceAccounts, root CA) settle
count "$dir/counts-before.json"
step attach gf attach --i-know-this-is-real --kwok-shards 2 --remote-shards 1
"$bin" kwok-shard --kubeconfig "$kc" --results-dir "$dir" --shard 2 --of 2 >"$dir/kwok-shard-2.log" 2>&1 &
shard_pid=$!
sleep 5
step nodes gf nodes "$nodes"
step load gf load $((nodes * 2)) 1
step fault-gpu-xid gf fault gpu-xid --nodes 5
sleep 20 # the fault's stage marks the nodes; the snapshot's scrapes see it
step status-loaded gf status
step snapshot gf snapshot --source direct
step fault-clear gf fault clear --all
step detach gf detach
kill -INT "$shard_pid"
shard_rc=0
wait "$shard_pid" || shard_rc=$?
shard_pid=""
steps+=("{\"step\": \"kwok-shard 2 stopped by Ctrl-C\", \"exit\": $shard_rc}")
sleep 10 # namespace and node deletion finish
count "$dir/counts-after.json"
python3 - "$dir" "$nodes" "${steps[@]}" <<'PY'
import json, sys
d, nodes, steps = sys.argv[1], int(sys.argv[2]), [json.loads(s) for s in sys.argv[3:]]
before = json.load(open(f"{d}/counts-before.json"))
after = json.load(open(f"{d}/counts-after.json"))
differ = {k: {"before": before.get(k, 0), "after": after.get(k, 0)}
          for k in sorted(set(before) | set(after)) if before.get(k, 0) != after.get(k, 0)}
summary = {
    "what": f"attach -> {nodes} nodes through 2 kwok shards (one in its own kwok-shard process) -> load -> gpu-xid -> snapshot -> detach, on a bare control plane; object counts by kind before attach and after detach",
    "nodes": nodes, "steps": steps, "kinds": len(before), "countsBefore": before, "countsAfter": after,
    "differ": differ,
    "note": "events are not GhostFleet's to delete: the events that nodes and pods caused stay until the apiserver's event TTL (1 h) removes them",
}
json.dump(summary, open(f"{d}/summary.json", "w"), indent=2)
print(json.dumps({k: summary[k] for k in ("steps", "kinds", "differ")}, indent=2))
PY
echo "written: $dir"
