#!/usr/bin/env bash
# Experiment F, twenty-fifth part, every sitting
# (docs/experiment-design.md): what gangs waiting for capacity cost the
# other work sent meanwhile. On one fresh fleet of NODES under PROFILE
# (the built-in gang profile), RUNS rounds of the arms in ARMS, their
# order rotated by one each round (against drift; with the default two
# arms, control first in odd rounds):
#   control: FILL 8-GPU pods take as many nodes (`load FILL 8`; none by
#     default), one more 8-GPU pod takes a node (`load 1 8`), WAIT passes, then a
#     steady stream of 1-GPU pods (`load STREAM 1 --rate RATE`: the pod
#     startup SLO's kind of run);
#   gang (or gangN): the same pods, then one job (N jobs) of NODES − FILL
#     whole-node workers each (`train --jobs N --pods-per-job NODES-FILL
#     --gpus-per-pod 8`), gang scheduled (each PodGroup's minCount is its
#     job's size): one node short, none can start; train gives up after
#     WAIT and leaves them waiting; once all their pods exist, the same
#     stream;
#   admit (or admitN): as gang (gangN), with `train --admission quota`:
#     every job's pods wait behind a scheduling gate, out of the
#     scheduler's queue, until the fleet's free GPUs cover the job;
#     admitNwK removes an admitted job's gates K at a time
#     (`--ungate-workers K`, K ≤ 64; admitN: train's default); admitNs
#     creates the Jobs suspended instead, no pod until admission
#     unsuspends one (`--admit-by suspend`); a trailing rR (R ≤ N, with
#     RELEASE=1) frees R jobs' nodes at once instead of one: R − 1 jobs'
#     worth of the FILL pods are held pods instead (below); a trailing pP
#     after it makes the arm's jobs P workers each instead of NODES − FILL,
#     and its FILL NODES − P (so that arms of one sitting free the same
#     nodes to jobs of other sizes: admit8sr8 and admit16sr16p50 with
#     FILL=900 both free 800);
#   pendingN: the same pods, then N plain pods of 9 GPUs each, more than
#     any node has, so never schedulable (`load N 9 --allow-unschedulable`,
#     which ends once all are unschedulable), then the same stream: as
#     many pending pods as N/(NODES − FILL) gangs, with no gang.
# With PROBE_BESIDE=1 (and RELEASE=1), a `ghostfleet probe` of 20 trials
# starts in the background with each train, in a process of its own: the
# machine's speed at the moment the train's own start probe runs.
# With RELEASE=1, a gang or admit arm's train runs in the background
# through the stream; after it the stream's pods and then the one 8-GPU
# pod exit (`fault pod-exit --exit-code 0`), which frees exactly one job's
# nodes, and once that job runs whole train is interrupted: its record's
# startAfterFit is the time from those GPUs free to the job running. An
# admitN[wK|s]rR arm holds (R − 1) × (NODES − FILL) + 1 nodes with 8-GPU pods
# and fills (R − 1) × (NODES − FILL) fewer, the same nodes in all; they
# exit together (`--delay 3s`: all marked, then ended by kwok at one
# moment), which frees R jobs' nodes, and train ends once R jobs run.
# `unload` ends each arm; the fleet is deleted at the end. Each load and
# train writes its own results/ folder, and each stream a snapshot of its
# window (report.html).
#
#   hack/experiment-f-gang-queue.sh [RUNS] [NODES]      (defaults: 3, 1000)
#   STREAM=1200 RATE=10 WAIT=120 FILL=0 PROFILE=gang ARMS="control gang" hack/experiment-f-gang-queue.sh
#   FILL=900 STREAM=450 WAIT=45 hack/experiment-f-gang-queue.sh   (a gang of 100)
#   FILL=900 STREAM=450 WAIT=60 ARMS="gang gang3 gang20" hack/experiment-f-gang-queue.sh
#   FILL=900 STREAM=450 WAIT=60 ARMS="gang20 pending2000" hack/experiment-f-gang-queue.sh
#   FILL=900 STREAM=450 WAIT=60 RELEASE=1 ARMS="gang20 admit20" hack/experiment-f-gang-queue.sh
#   FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3w1 admit3w8" hack/experiment-f-gang-queue.sh 5
#   FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3w8 admit3s" hack/experiment-f-gang-queue.sh
#   FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3s admit3sr3" hack/experiment-f-gang-queue.sh
#   FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit8sr8 admit16sr16p50" hack/experiment-f-gang-queue.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
nodes=${2:-1000}
stream=${STREAM:-1200}
rate=${RATE:-10}
wait_s=${WAIT:-120}
fill=${FILL:-0}
gang=$((nodes - fill))
profile=${PROFILE:-gang}
release=${RELEASE:-0}
probe_beside=${PROBE_BESIDE:-0}
probe_pid=
read -ra arms <<<"${ARMS:-control gang}"
allowed="(allowed: control, gang, gangN or admit, admitN, admitNwK, admitNs with N ≥ 1 jobs and 1 ≤ K ≤ 64 gate removals at once, each admitN… with a trailing rR for R ≤ N jobs released at once and then pP for P < NODES workers per job, pendingN with N ≥ 1 pods)"
[ ${#arms[@]} -gt 0 ] || { echo "ARMS: no arm named $allowed" >&2; exit 2; }
[ "$probe_beside" != 1 ] || [ "$release" = 1 ] || { echo "PROBE_BESIDE=1 probes beside a train run in the background, which needs RELEASE=1 (RELEASE=$release)" >&2; exit 2; }
for a in "${arms[@]}"; do
	[[ $a =~ ^(control|gang|admit|(gang|pending)[1-9][0-9]*|admit([1-9][0-9]*)(w([1-9]|[1-5][0-9]|6[0-4])|s)?(r([1-9][0-9]*)(p([1-9][0-9]*))?)?)$ ]] || { echo "ARMS: unknown arm \"$a\" $allowed" >&2; exit 2; }
	r=${BASH_REMATCH[7]} p=${BASH_REMATCH[9]}
	armgang=$gang armfill=$fill
	if [ -n "$p" ]; then
		[ "$p" -lt "$nodes" ] || { echo "ARMS: arm \"$a\" has jobs of $p workers: P must be under the fleet's $nodes nodes" >&2; exit 2; }
		armgang=$p armfill=$((nodes - p))
	fi
	if [ -n "$r" ]; then
		[ "$r" -le "${BASH_REMATCH[3]}" ] || { echo "ARMS: arm \"$a\" releases $r jobs of its ${BASH_REMATCH[3]}: R must be at most N" >&2; exit 2; }
		[ "$release" = 1 ] || { echo "ARMS: arm \"$a\" releases jobs, which needs RELEASE=1 (RELEASE=$release)" >&2; exit 2; }
		[ $(((r - 1) * armgang)) -le "$armfill" ] || { echo "ARMS: arm \"$a\" needs $(((r - 1) * armgang)) of its $armfill filled nodes held to release $r jobs of $armgang nodes: FILL (or NODES − P) must be at least that" >&2; exit 2; }
	fi
done
. hack/lib.sh
gf_build
name=gf-exp-f
log=$(mktemp)
trainlog=$(mktemp)
probelog=$(mktemp)
train_pid=
trap '[ -z "$train_pid" ] || kill "$train_pid" 2>/dev/null || true; rm -f "$log" "$trainlog" "$probelog"; "$bin" --name "$name" clean >/dev/null 2>&1 || true' EXIT

# count STATE: how many pods status counts in STATE (pending, running),
# or nothing when status could not say; status exits 1 on an unhealthy
# component, but still prints.
count() {
	local n
	n=$({ "$bin" --name "$name" status -o json || true; } | python3 -c 'import json,sys; print(json.load(sys.stdin)["pods"]["'"$1"'"])' 2>/dev/null) || true
	[[ $n =~ ^[0-9]+$ ]] && echo "$n" || true
}

# await STATE CMP N WHAT: polls until count STATE CMP N (-ge, -le), for
# at most 300 s; stops the script sooner if a background train ended.
await() {
	local deadline=$((SECONDS + 300)) n=
	while [ "$SECONDS" -lt "$deadline" ]; do
		n=$(count "$1")
		[ -n "$n" ] && [ "$n" "$2" "$3" ] && return 0
		if [ -n "$train_pid" ] && ! kill -0 "$train_pid" 2>/dev/null; then
			# A train whose jobs all run ends by itself: it may have
			# done so just after the count above was read.
			n=$(count "$1")
			[ -n "$n" ] && [ "$n" "$2" "$3" ] && return 0
			cat "$trainlog"
			echo "== $4: train ended (its output above): stopping"
			exit 1
		fi
		sleep 1
	done
	echo "== $4: $1 pods ${n:-unknown} after 300s: stopping"
	exit 1
}

# arm control|gang|gangN|admit|admitN|admitNwK|admitNs[rR[pP]]|pendingN:
# one arm, from an unloaded fleet back to one.
arm() {
	local rel=1 a=$1 gang=$gang fill=$fill
	if [[ $a =~ ^(admit.*r[0-9]+)p([0-9]+)$ ]]; then
		a=${BASH_REMATCH[1]} gang=${BASH_REMATCH[2]}
		fill=$((nodes - gang))
	fi
	if [[ $a =~ ^admit.*r([0-9]+)$ ]]; then
		rel=${BASH_REMATCH[1]}
		a=${a%r*}
	fi
	local armfill=$((fill - (rel - 1) * gang)) held=$(((rel - 1) * gang + 1))
	if [ "$armfill" -gt 0 ]; then
		echo "== $1: $armfill 8-GPU pods take as many nodes"
		"$bin" --name "$name" load "$armfill" 8 --namespace gf-exp-fill
	fi
	echo "== $1: $held 8-GPU pod(s) take as many nodes"
	"$bin" --name "$name" load "$held" 8 --namespace gf-exp-held
	if [[ $1 == pending* ]]; then
		local n=${1#pending}
		echo "== $1: $n pods of 9 GPUs, more than any node has, never schedulable"
		# load exits 1 on unschedulable pods, as these are meant to be;
		# its output says whether they all are.
		"$bin" --name "$name" load "$n" 9 --allow-unschedulable --namespace gf-exp-pending | tee "$log" || true
		grep -q "scheduled 0, running 0, unschedulable $n," "$log" || {
			echo "== not all $n pods were left unschedulable (see load's output above): stopping"
			exit 1
		}
	elif [ "$1" != control ]; then
		local jobs=${a#gang} admission=none by=() waiting
		if [[ $a == admit* ]]; then
			jobs=${a#admit} admission=quota
			if [[ $jobs == *w* ]]; then
				by=(--ungate-workers "${jobs#*w}")
				jobs=${jobs%w*}
			elif [[ $jobs == *s ]]; then
				by=(--admit-by suspend)
				jobs=${jobs%s}
			fi
		fi
		jobs=${jobs:-1}
		local train=("$bin" --name "$name" train --jobs "$jobs" --pods-per-job "$gang" --gpus-per-pod 8 --gang on --admission "$admission" "${by[@]}" --stall 0)
		if [ "$release" = 1 ]; then
			echo "== $1: $jobs job(s) of $gang whole-node workers, admission $admission${by:+ ${by[*]}}, train in the background until $rel of them run"
			local started
			started=$(date -u +%Y-%m-%dT%H:%M:%S) # kwok logs in UTC, "…Z"
			"${train[@]}" --timeout 3600s >"$trainlog" 2>&1 &
			train_pid=$!
			if [ "$probe_beside" = 1 ]; then
				# A probe of its own process at the train's start: the
				# machine's speed beside the train's own start probe.
				"$bin" probe --trials 20 --note "beside $1's train, started with it" >"$probelog" 2>&1 &
				probe_pid=$!
			fi
		else
			echo "== $1: $jobs job(s) of $gang whole-node workers, admission $admission${by:+ ${by[*]}}, waiting (train gives up after ${wait_s}s and leaves them)"
			# train ends at its timeout with the jobs left waiting (exit
			# 0); anything else means the arm is not what it says.
			"${train[@]}" --timeout "${wait_s}s" | tee "$log"
			grep -q "jobs fully running 0, partly 0, not at all $jobs$" "$log" || {
				echo "== the gangs are not waiting whole (see train's output above): stopping"
				exit 1
			}
		fi
		# The Job controller creates pods at its client's QPS: the stream
		# starts once every gang's pods exist (and so every gang is tried);
		# a suspended Job has none until admitted (here, none is).
		if [[ $a == admit*s ]]; then
			echo "== $1: the $jobs Jobs wait suspended, with no pod"
			waiting=0
		else
			waiting=$((jobs * gang))
			await pending -ge "$waiting" "the gangs' pods"
			echo "== $1: all $waiting of the gangs' pods exist and wait"
		fi
		if [ -n "$probe_pid" ]; then
			wait "$probe_pid" || { cat "$probelog"; echo "== the probe beside the train's start failed (its output above): stopping"; exit 1; }
			probe_pid=
		fi
		if [ "$release" = 1 ]; then
			sleep "$wait_s"
			local running pending
			running=$(count running)
			[ "${running:-0}" -eq $((fill + 1)) ] || { echo "== ${running:-an unknown number of} pods run after ${wait_s}s, not the fill's $((fill + 1)): stopping"; exit 1; }
			pending=$(count pending)
			[ "${pending:--1}" -eq "$waiting" ] || { echo "== ${pending:-an unknown number of} pods wait after ${wait_s}s, not the gangs' $waiting: stopping"; exit 1; }
		fi
	else
		echo "== control: ${wait_s}s with nothing waiting"
		sleep "$wait_s"
	fi
	echo "== $1: $stream 1-GPU pods at $rate pods/s"
	"$bin" --name "$name" load "$stream" 1 --rate "$rate" --namespace gf-exp-stream 2>&1 | tee "$log" || echo "== the stream's load failed (its record says why)"
	snapshot_of "$log" || true
	if [ "$release" = 1 ] && [[ $1 == gang* || $1 == admit* ]]; then
		local delay=()
		[ "$rel" -eq 1 ] || delay=(--delay 3s)
		echo "== $1: the stream's pods exit, then the $held held 8-GPU pod(s)${delay:+, together}: $rel job(s)' nodes free"
		"$bin" --name "$name" fault pod-exit --exit-code 0 --namespace gf-exp-stream >/dev/null
		await running -le $((fill + 1)) "the stream's pods ending"
		"$bin" --name "$name" fault pod-exit --exit-code 0 "${delay[@]}" --namespace gf-exp-held >/dev/null
		await running -ge $((fill + gang)) "$rel job(s) running whole"
		sleep 2 # the run's own watch sees it too
		kill -INT "$train_pid" 2>/dev/null || true # a run whose jobs all run ends by itself
		wait "$train_pid" || true
		train_pid=
		cat "$trainlog"
		# kwok's errors from the train's start on, kept beside its record
		# (the fleet and its logs are removed at the end): why a pod
		# status write failed, which the audit log does not say. Only
		# kept: a log that cannot be read does not stop the sitting.
		local rundir kwoklog="$HOME/.kwok/clusters/$name/logs/kwok-controller.log"
		rundir=$(sed -n 's/^run record: //p' "$trainlog" | tail -1)
		if [ -d "$rundir" ] && [ -f "$kwoklog" ]; then
			awk -v from="$started" 'index($0, "\"level\":\"ERROR\"") && match($0, /"time":"[^"]*"/) && substr($0, RSTART + 8, RLENGTH - 9) >= from' \
				"$kwoklog" >"$rundir/kwok-controller-errors.log" || echo "== kwok's errors were not kept beside $rundir"
		fi
		grep -q "jobs fully running $rel, partly 0, not at all $((jobs - rel))$" "$trainlog" || {
			echo "== not exactly $rel job(s) ran whole after the release (see train's output above): stopping"
			exit 1
		}
	fi
	"$bin" --name "$name" unload
}

fresh_fleet "$profile" "$nodes"
for i in $(seq "$runs"); do
	echo "== round $i of $runs"
	for ((j = 0; j < ${#arms[@]}; j++)); do
		arm "${arms[$(((i - 1 + j) % ${#arms[@]}))]}"
	done
done
