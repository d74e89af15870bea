#!/usr/bin/env bash
# Experiment D (docs/experiment-design.md): the knee of sustainable churn,
# found by `ghostfleet knee churn` (doubling from 25 pods/s, bisecting to
# 10 %, 60 s steps), each search on a fresh fleet. A profile written
# PROFILE/noprom is brought up with --prometheus-port 0: no Prometheus, so
# its steps are judged on the create ratio alone (Prometheus as a load
# source); one written PROFILE/createsonly keeps Prometheus and judges its
# steps on the create ratio alone too (knee churn --creates-only), so
# that the two are judged alike. Rounds alternate the profiles, so drift hits every side alike.
# Each search writes results/knee-<time>/run.json and a churn-<time>/
# folder per step.
#
#   hack/experiment-d.sh [ROUNDS] [NODES] [PROFILES]
#   (defaults: 3, 1000, "default tuned default/noprom")
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
nodes=${2:-1000}
profiles=${3:-default tuned default/noprom}
. hack/lib.sh
gf_build
name=gf-exp-d
trap '"$bin" --name "$name" clean >/dev/null 2>&1 || true' EXIT
for i in $(seq "$rounds"); do
	for side in $profiles; do
		echo "== $side, knee search $i of $rounds"
		judge=()
		case $side in
		*/noprom) fresh_fleet "${side%/noprom}" "$nodes" --prometheus-port 0 ;;
		*/createsonly) fresh_fleet "${side%/createsonly}" "$nodes"; judge=(--creates-only) ;;
		*) fresh_fleet "$side" "$nodes" ;;
		esac
		"$bin" --name "$name" knee churn "${judge[@]}" 2>&1 || echo "== knee search failed (its run folder says why)"
	done
done
