#!/usr/bin/env bash
# GhostFleet's steady-state pod startup next to the real ClusterLoader2's
# PodStartupLatency, on one fleet and profile, at the same rate:
#   1. `ghostfleet cl2` runs scenarios/density: saturation Deployments
#      (4 one-GPU pods per node), then latency pods at CL2_LATENCY_QPS/s;
#   2. GhostFleet saturates the same way (`load` burst, 4 pods per node),
#      then `load --rate` sends as many latency pods at the same rate;
#   3. prints both pod startup p50/p90/p99 and the ratios.
# Both run folders land under results/; docs/cl2-comparison.md writes them up.
#
#   hack/cl2-compare.sh CLUSTERLOADER [RATE]     (fleet: $GHOSTFLEET_CLUSTER or ghostfleet; RATE default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
cl2=${1:?usage: hack/cl2-compare.sh CLUSTERLOADER [RATE]}
rate=${2:-10}
name=${GHOSTFLEET_CLUSTER:-ghostfleet}
bin=bin/ghostfleet
go build -o "$bin" ./cmd/ghostfleet

nodes=$("$bin" status --name "$name" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"]["ready"])')
echo "fleet $name: $nodes Ready nodes; latency pods at $rate/s"
"$bin" unload --name "$name" >/dev/null

echo "== ClusterLoader2 density (saturation $((nodes * 4)) pods, then $nodes latency pods at $rate/s)"
dir_of() { python3 -c 'import json,sys; print(json.load(sys.stdin)["dir"])'; }
cl2dir=$(CL2_LATENCY_QPS=$rate "$bin" cl2 --name "$name" --binary "$cl2" --nodes "$nodes" -o json | dir_of)

echo "== GhostFleet: saturate ($((nodes * 4)) pods, a burst), then $nodes pods at $rate/s"
"$bin" load $((nodes * 4)) 1 --name "$name" --namespace gf-saturation
loaddir=$("$bin" load "$nodes" 1 --rate "$rate" --name "$name" --namespace gf-latency -o json | dir_of)
"$bin" unload --name "$name" >/dev/null

python3 - "$cl2dir/run.json" "$loaddir/run.json" <<'PY'
import json, sys
cl2 = json.load(open(sys.argv[1]))["result"]
gf = json.load(open(sys.argv[2]))["result"]["startupLatency"]
lat = {l["metric"]: l for l in cl2["podStartupLatency"] if l["measurement"] == "PodStartupLatency"}
rows = [("create_to_schedule", "createToSchedule"), ("schedule_to_run", "scheduleToRun"),
        ("pod_startup", "podStartup")]
print(f"{'phase':20} {'':4} {'CL2 ms':>9} {'GhostFleet ms':>14} {'GF/CL2':>7}")
for cl2name, gfname in rows:
    for q in ("p50", "p90", "p99"):
        c = lat.get(cl2name, {}).get(q)
        g = gf[gfname][q] * 1000
        ratio = f"{g / c:.2f}" if c else "—"
        print(f"{cl2name:20} {q:4} {c if c is not None else float('nan'):9.1f} {g:14.1f} {ratio:>7}")
print("CL2:", sys.argv[1], " GhostFleet:", sys.argv[2])
PY
