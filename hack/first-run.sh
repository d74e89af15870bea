#!/usr/bin/env bash
# Measures a first run (#12): a fresh clone of this checkout's HEAD and
# empty Go and GhostFleet caches, to a live console over 1,000 Ready
# nodes — what `make run` does on a fresh machine: make build, then
# `ghostfleet up --prometheus-later` (which the console runs itself when no
# fleet is up: the fleet comes up before Prometheus is built) and the
# console's first frame (console --once: no terminal is needed). Then the
# step the live console does in the background: Prometheus built and added
# (here by `ghostfleet up`, in the foreground). Every line of output gets
# the seconds since the clone started, so each step's time can be read off.
#
#   hack/first-run.sh [CACHE]
#
# CACHE (default: a new temporary folder, removed at the end) holds the
# run's GOMODCACHE (CACHE/gomod), GOCACHE (CACHE/go-build) and GhostFleet's
# binaries (XDG_CACHE_HOME=CACHE); it must be empty or absent, so the run
# is a first one. Writes results/first-run-<time>/: run.log (the stamped
# output) and summary.json (when each step ended, and the total).
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/lib.sh
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
	echo "hack/first-run.sh: the checkout has uncommitted changes; it measures a clone of HEAD ($(git rev-parse --short HEAD)): commit first" >&2
	exit 2
fi
cache=${1:-}
tmp_cache=""
if [ -z "$cache" ]; then
	cache=$(mktemp -d /tmp/gf-first-run-cache.XXXXXX)
	tmp_cache=$cache
elif [ -e "$cache" ] && [ -n "$(ls -A "$cache")" ]; then
	echo "hack/first-run.sh: cache folder $cache is not empty: a first run starts with empty caches" >&2
	exit 2
fi
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
new_run_dir first-run
clone=$(mktemp -d /tmp/gf-first-run-clone.XXXXXX)
name=gf-first-run
cleanup() {
	(cd "$clone" && [ -x bin/ghostfleet ] && ./bin/ghostfleet --name "$name" clean >/dev/null 2>&1) || true
	rm -rf "$clone"
	if [ -n "$tmp_cache" ]; then chmod -R u+w "$tmp_cache" 2>/dev/null || true; rm -rf "$tmp_cache"; fi
}
trap cleanup EXIT

# GHOSTFLEET_PROMETHEUS_FROM passes through (auto: Debian's Prometheus;
# the runs of 2026-12-01 took it by default, before build became the default).
export GOMODCACHE=$cache/gomod GOCACHE=$cache/go-build XDG_CACHE_HOME=$cache GHOSTFLEET_CLUSTER=$name
start=${EPOCHREALTIME/./}
since() { # seconds since start, to a tenth
	local us=$((${EPOCHREALTIME/./} - start))
	printf '%d.%d' $((us / 1000000)) $((us / 100000 % 10))
}
stamp() { # prefixes each line with the seconds since start
	local line
	while IFS= read -r line; do printf '%7s %s\n' "$(since)" "$line"; done
}
set +e
{
	echo "first run of $(git rev-parse --short HEAD) on $(nproc) cores; caches in $cache; prometheus from ${GHOSTFLEET_PROMETHEUS_FROM:-build}"
	git clone -q "$PWD" "$clone" && echo "== step clone" &&
		(cd "$clone" && make -s build) && echo "== step ghostfleet-built" &&
		# What make run does on a fresh machine (the console brings the
		# fleet up with up's defaults, then draws); without a terminal
		# the console draws one frame and exits.
		(cd "$clone" && ./bin/ghostfleet up --prometheus-later) && echo "== step up" &&
		(cd "$clone" && ./bin/ghostfleet console --once --results-dir "$dir") && echo "== step console" &&
		(cd "$clone" && ./bin/ghostfleet up) && echo "== step prometheus"
} 2>&1 | stamp | tee "$dir/run.log"
rc=${PIPESTATUS[0]}
set -e
total=$(since)
steps=$(awk '$2 == "==" && $3 == "step" { printf "%s\"%s\": %s", sep, $4, $1; sep = ", " }' "$dir/run.log")
printf '{\n  "commit": "%s",\n  "cores": %s,\n  "exitCode": %s,\n  "totalSeconds": %s,\n  "stepEndSeconds": {%s}\n}\n' \
	"$(git rev-parse HEAD)" "$(nproc)" "$rc" "$total" "$steps" >"$dir/summary.json"
echo "wrote $dir (total ${total}s, exit $rc)"
exit "$rc"
