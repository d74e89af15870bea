#!/usr/bin/env bash
# Experiment C (docs/experiment-design.md): `binpack --fill 0.95 --seed 1`
# on 1,000 nodes, three times under `default` (LeastAllocated: spreading)
# and three times under `fast` (MostAllocated on nvidia.com/gpu), one
# fresh fleet per profile, the pods removed between runs. Each run writes
# its own results/binpack-<time>/ folder; run.json names the profile.
#
#   hack/experiment-c.sh [RUNS] [NODES]      (defaults: 3, 1000)
#   PROFILES=default hack/experiment-c.sh 1  (one run, spreading only)
#   GPU_MODEL=dra hack/experiment-c.sh       (GPUs as DRA devices: the
#     pods ask through a ResourceClaimTemplate per size, --claim count)
#   GPU_MODEL=dra DRA_EXTENDED=1 hack/experiment-c.sh   (the DeviceClass
#     also serves nvidia.com/gpu, and the pods ask for it: --claim none)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
nodes=${2:-1000}
. hack/lib.sh
gf_build
name=gf-exp-c
trap '"$bin" --name "$name" clean >/dev/null 2>&1 || true' EXIT
up_flags=(--gpu-model "${GPU_MODEL:-extended}")
binpack_flags=()
if [ -n "${DRA_EXTENDED:-}" ]; then
	up_flags+=(--dra-extended-resource)
	binpack_flags+=(--claim none)
fi
for profile in ${PROFILES:-default fast}; do
	fresh_fleet "$profile" "$nodes" "${up_flags[@]}"
	for i in $(seq "$runs"); do
		echo "== $profile, run $i of $runs"
		"$bin" --name "$name" binpack --fill 0.95 --seed 1 "${binpack_flags[@]}"
		"$bin" --name "$name" unload
	done
done
