# GhostFleet. `make run` brings the fleet up; `make test` is what CI runs.
SHELL := /bin/bash
GO ?= go
BIN := bin/ghostfleet
E2E_TIMEOUT ?= 55m

.PHONY: build run up test unit e2e tools lint bench-nodes clean-fleet chaos soak findings shard-bench attach-run first-run experiment-b-steady experiment-c experiment-c-dra experiment-c-dra-extended experiment-c-profile experiment-d experiment-d-prometheus experiment-d-sustain experiment-e experiment-f experiment-f-breaks experiment-f-kinds experiment-f-restart experiment-f-restart-gang experiment-f-restart-waits experiment-f-restart-apiserver experiment-f-restart-scheduler-cpu experiment-f-restart-writes experiment-f-restart-audit experiment-f-restart-gc-workers experiment-f-restart-request-times experiment-f-restart-trace experiment-f-restart-sched-etcd experiment-f-restart-procs experiment-f-restart-etcd-trace experiment-f-gang-queue experiment-f-gang-queue-small experiment-f-gang-queues experiment-f-gang-pending experiment-f-gang-admission experiment-f-gang-ungate experiment-f-gang-suspend experiment-f-gang-suspend-kcm experiment-f-gang-bind experiment-f-gang-bind-qps experiment-f-gang-bind-burst experiment-f-gang-release experiment-f-gang-release-qps experiment-f-gang-release-burst experiment-f-gang-release-burst400 experiment-f-gang-release-burst450 experiment-f-gang-release-burst500 experiment-f-gang-release-five experiment-f-gang-release-five-burst1000 experiment-f-gang-release-seven experiment-f-gang-release-seven-burst700 experiment-f-gang-release-seven-burst850 experiment-f-gang-release-tokens experiment-f-gang-release-nine experiment-f-gang-release-speed experiment-host-probe experiment-f-gang-release-start-probe experiment-host-probe-binaries experiment-f-gang-release-sizes experiment-f-gang-release-sizes-watch

# The compile flags of the control plane's build (fleet/binaries): on a first
# run the packages both use (client-go, k8s.io/api…) compile once, not twice;
# and its compiler GC setting (binaries.CompileGOGC): 0.9× the CPU.
build:
	GOGC=$${GOGC:-300} $(GO) build -trimpath -gcflags=all=-dwarf=false -o $(BIN) ./cmd/ghostfleet

# Builds what is missing (first run: the control plane from source, see the
# README for the measured time), brings up 1,000 fake GPU nodes and opens
# the console.
run: build
	./$(BIN)

up: build
	./$(BIN) up

# Unit tests, then the integration suite against a real control plane and
# Prometheus that the suite brings up itself.
test: unit e2e

unit:
	$(GO) test ./...

# The suite runs on the pinned Prometheus (the default; set here against a
# user's GHOSTFLEET_PROMETHEUS_FROM), the one its instruments are checked on:
# on Debian's 2.42, TestDirectScrape's direct and Prometheus p99s disagreed.
e2e: build tools
	GHOSTFLEET_PROMETHEUS_FROM=build $(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -v ./test/e2e/

# The suite opens a report in Debian's headless Chromium and drives the
# console in tmux.
tools:
	@missing=""; for t in chromium tmux; do command -v $$t >/dev/null || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then echo "installing Debian's$$missing for the e2e suite"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi
	@chromium --version 2>/dev/null | grep -v "unexpected operator" || true
	@tmux -V

# staticcheck is pinned and installed from the Go module proxy on first use.
STATICCHECK := bin/tools/staticcheck

$(STATICCHECK):
	GOBIN=$(abspath bin/tools) $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./test/e2e/
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags e2e ./test/e2e/

bench-nodes: build
	./$(BIN) bench nodes --rounds 3

# Regenerates the figure tables of docs/findings.md and docs/benchmarks.md from the run folders they name
# (a unit test fails when the committed file and its runs disagree).
findings: build
	./$(BIN) findings docs/findings.md
	./$(BIN) findings docs/benchmarks.md

clean-fleet: build
	./$(BIN) clean

# Kill each component mid-churn and bring it back (results/chaos-<time>/).
chaos: build
	hack/chaos.sh

# One hour of churn with the console attached, sampling its memory and
# goroutines and every component's CPU and RSS (results/soak-<time>/).
soak: build
	hack/soak.sh

# One kwok controller against two shards at 5,000 nodes, side by side
# (results/shard-bench-<time>/; needs the control plane `make up` builds).
shard-bench: build
	hack/shard-bench.sh

# Attach's whole path on a second control plane: 200 nodes through two
# shards (one in its own kwok-shard process), load, gpu-xid, snapshot,
# detach, and every kind's object count before and after
# (results/attach-run-<time>/; needs kubectl).
attach-run: build
	hack/attach-run.sh

# A first run measured: fresh clone, empty caches, to the console's first
# frame (#12); writes results/first-run-<time>/.
first-run:
	hack/first-run.sh

# Experiment B's steady state: 2,000 pods at 20 pods/s onto a fleet holding
# 6,000, judged against the pod startup SLO, three runs.
experiment-b-steady:
	hack/experiment-b-steady.sh

# Experiment C: binpack to 95 % under default and fast, three runs each.
experiment-c:
	hack/experiment-c.sh

# The same with the fleet's GPUs as DRA devices (up --gpu-model dra).
experiment-c-dra:
	GPU_MODEL=dra hack/experiment-c.sh

# DRA devices whose DeviceClass serves nvidia.com/gpu, pods asking for
# it, under fast: can devices be packed?
experiment-c-dra-extended:
	GPU_MODEL=dra DRA_EXTENDED=1 PROFILES=fast hack/experiment-c.sh

# C, fourth part: CPU profiles early and late in each binpack, per GPU
# model (extended resources, DRA claims, DRA serving nvidia.com/gpu).
experiment-c-profile:
	hack/experiment-c-profile.sh

# Experiment D: the churn knee by search, three rounds of default, tuned
# and default without Prometheus, each on a fresh fleet.
experiment-d:
	hack/experiment-d.sh

# Experiment D, second part: two searches under default with Prometheus,
# judged on creates alone (--creates-only), as those without it are.
experiment-d-prometheus:
	hack/experiment-d.sh 2 1000 default/createsonly

# Experiment D held: churn at 50 pods/s for ten minutes under default
# and tuned, each on a fresh fleet, with a snapshot of the window.
experiment-d-sustain:
	hack/experiment-d-sustain.sh

# Experiment E: the real ClusterLoader2 density test on 1,000 nodes under
# default and tuned; GHOSTFLEET_CL2 names a clusterloader built from
# perf-tests (docs/cl2.md).
experiment-e:
	hack/experiment-e.sh

# Experiment F: Xid 79 on 50 nodes while 120 whole-node jobs arrive,
# without and with gang scheduling, three runs each.
experiment-f:
	hack/experiment-f.sh

experiment-f-breaks:
	hack/experiment-f-breaks.sh

# F's breaks with an ECC Xid, then NVLink, instead of Xid 79 (default profile).
experiment-f-kinds:
	FAULT="gpu-xid --xid 48" DOWN=0 PROFILES=default hack/experiment-f-breaks.sh
	FAULT=nvlink DOWN=0 PROFILES=default hack/experiment-f-breaks.sh

# F's Xid 79 breaks with each broken job restarting whole (train --restart job).
experiment-f-restart:
	RESTART=job DOWN=0 PROFILES=default hack/experiment-f-breaks.sh

# The same under a profile of scenarios/profiles/lever-cm-*.yaml:
# experiment-f-restart-cm-qps (default with the controller-manager's QPS
# alone raised), -cm-all (tuned's whole controller-manager, its workers
# too), -cm-all-gang (that gang-scheduled, experiment F's fifth part),
# -cm-qps-gang and -cm-burst-gang (the QPS, or the burst alone, raised and
# gang-scheduled: the sixth part). Not .PHONY: make skips the pattern
# search for phony targets.
experiment-f-restart-cm-%: scenarios/profiles/lever-cm-%.yaml
	RESTART=job DOWN=0 PROFILES=$< hack/experiment-f-breaks.sh

# The same under the built-in gang profile (upstream's controller-manager).
experiment-f-restart-gang:
	RESTART=job DOWN=0 PROFILES=gang hack/experiment-f-breaks.sh

# Experiment F's seventh part: the built-in gang profile, then the burst
# alone, then the QPS with the burst, raised (the sixth part's), in one
# sitting; train records the controller-manager's waits per phase.
experiment-f-restart-waits:
	RESTART=job DOWN=0 PROFILES="gang scenarios/profiles/lever-cm-burst-gang.yaml scenarios/profiles/lever-cm-qps-gang.yaml" hack/experiment-f-breaks.sh

# Experiment F's eighth and ninth parts: the burst alone, then the QPS
# with the burst, raised; train records the apiserver's request times,
# the scheduler's attempts and each process's CPU per phase too.
experiment-f-restart-apiserver:
	RESTART=job DOWN=0 PROFILES="scenarios/profiles/lever-cm-burst-gang.yaml scenarios/profiles/lever-cm-qps-gang.yaml" hack/experiment-f-breaks.sh

# F, tenth part: the QPS-500 control, then the same with kube-scheduler held
# to 0.2 cores by a cpu cgroup (needs a writable cpu cgroup controller).
experiment-f-restart-scheduler-cpu:
	RESTART=job DOWN=0 PROFILES="scenarios/profiles/lever-cm-qps-gang.yaml scenarios/profiles/lever-cm-qps-sched-cpu-gang.yaml" hack/experiment-f-breaks.sh

# F, eleventh part: QPS 500 with each restarted job created again 10 s
# after the old one is gone, so that no creation meets a teardown; then
# QPS 500 with etcd committing without fsync (not durable).
experiment-f-restart-writes:
	RESTART=job RESTART_DELAY=10s DOWN=0 PROFILES="scenarios/profiles/lever-cm-qps-gang.yaml" hack/experiment-f-breaks.sh
	RESTART=job DOWN=0 PROFILES="scenarios/profiles/lever-cm-qps-nofsync-gang.yaml" hack/experiment-f-breaks.sh

# F, twelfth and thirteenth parts: the burst alone, then QPS 500, each with
# the apiserver's audit log, which splits every teardown where the
# apiserver saw it.
experiment-f-restart-audit:
	RESTART=job DOWN=0 PROFILES="scenarios/profiles/lever-cm-burst-audit-gang.yaml scenarios/profiles/lever-cm-qps-audit-gang.yaml" hack/experiment-f-breaks.sh

# F, fourteenth and sixteenth parts: QPS 500 with the audit log and five
# times the garbage collector's workers.
experiment-f-restart-gc-workers:
	RESTART=job DOWN=0 PROFILES="scenarios/profiles/lever-cm-qps-audit-gc100-gang.yaml" hack/experiment-f-breaks.sh

# F, fifteenth and seventeenth parts: the burst alone, QPS 500, and QPS 500
# with five times the collector's workers, in one sitting, each with the
# audit log; train records the apiserver's time on each client's requests,
# its calls to etcd, its goroutines' waits to run and every process's
# wait for a core.
experiment-f-restart-request-times:
	RESTART=job DOWN=0 PROFILES="scenarios/profiles/lever-cm-burst-audit-gang.yaml scenarios/profiles/lever-cm-qps-audit-gang.yaml scenarios/profiles/lever-cm-qps-audit-gc100-gang.yaml" hack/experiment-f-breaks.sh

# Experiment F, eighteenth, nineteenth, twenty-first and twenty-fourth
# parts (docs/experiment-design.md): the same breaks under the burst
# alone and under QPS 500 with 100 collector workers, each train taking a
# Go execution trace of the apiserver over the hold's first 30s, which
# holds the breaks' teardown: where the DELETEs' time went; from the
# nineteenth, etcd's own time on each call beside the apiserver's; from
# the twenty-first, each wait for etcd split at its answer's arrival;
# from the twenty-fourth, a sample of the calls' sends.
experiment-f-restart-trace:
	RESTART=job DOWN=0 TRACE=30s PROFILES="scenarios/profiles/lever-cm-burst-audit-gang.yaml scenarios/profiles/lever-cm-qps-audit-gc100-gang.yaml" hack/experiment-f-breaks.sh

# Experiment F, twentieth part (docs/experiment-design.md): the nineteenth
# part's 100-worker runs with kube-scheduler held to 0.2 cores: is the
# scheduler's CPU what lengthens the apiserver's calls to etcd outside
# etcd?
experiment-f-restart-sched-etcd:
	RESTART=job DOWN=0 TRACE=30s PROFILES="scenarios/profiles/lever-cm-qps-audit-gc100-sched-cpu-gang.yaml" hack/experiment-f-breaks.sh

# Experiment F, twenty-second part (docs/experiment-design.md): the
# twenty-first part's 100-worker runs, then the same with kube-apiserver's
# Go runtime given eight Ps (GOMAXPROCS=8): do its goroutines, the etcd
# connections' readers among them, wait for a P rather than for a core?
experiment-f-restart-procs:
	RESTART=job DOWN=0 TRACE=30s PROFILES="scenarios/profiles/lever-cm-qps-audit-gc100-gang.yaml scenarios/profiles/lever-cm-qps-audit-gc100-procs8-gang.yaml" hack/experiment-f-breaks.sh

# Experiment F, twenty-third part (docs/experiment-design.md): the
# twenty-first part's two profiles with etcd traced over the whole hold
# too: is the apiserver's added wait outside etcd's handler spent in
# etcd's own gRPC server?
experiment-f-restart-etcd-trace:
	RESTART=job DOWN=0 TRACE=30s ETCD_TRACE=180s PROFILES="scenarios/profiles/lever-cm-burst-audit-gang.yaml scenarios/profiles/lever-cm-qps-audit-gc100-gang.yaml" hack/experiment-f-breaks.sh

# Experiment F, twenty-fifth part (docs/experiment-design.md): what a gang
# that cannot fit costs a steady stream of other pods (three pairs of
# arms, with and without the waiting gang, on one gang-profile fleet).
experiment-f-gang-queue:
	hack/experiment-f-gang-queue.sh

# The same with 900 whole-node pods filling the fleet first, so that a gang
# of 100 is the one a node short (F, twenty-fifth part, second sitting).
experiment-f-gang-queue-small:
	FILL=900 STREAM=450 WAIT=45 hack/experiment-f-gang-queue.sh

# The same with several waiting gangs of 100 (1, 3 and 20 in each round; F,
# twenty-fifth part, third sitting).
experiment-f-gang-queues:
	FILL=900 STREAM=450 WAIT=60 ARMS="gang gang3 gang20" hack/experiment-f-gang-queue.sh

# Twenty waiting gangs of 100 against as many pending pods that no node
# fits, with no gang (F, twenty-fifth part, fourth sitting).
experiment-f-gang-pending:
	FILL=900 STREAM=450 WAIT=60 ARMS="gang20 pending2000" hack/experiment-f-gang-queue.sh

# The same with twenty gangs held out of the scheduler's queue by quota
# admission (train --admission quota) beside twenty native ones, then
# one job's nodes freed: what each costs the stream, and how soon each
# starts when capacity frees (F, twenty-fifth part, fifth sitting).
experiment-f-gang-admission:
	FILL=900 STREAM=450 WAIT=60 RELEASE=1 ARMS="gang20 admit20" hack/experiment-f-gang-queue.sh

# An admitted gang's gates removed one at a time (the fifth sitting's
# admitter) beside eight at a time (as Kueue's pod-group integration):
# the scheduler's failed attempts on the partly ungated gang, and how
# soon it runs whole once one job's nodes free (F, twenty-fifth part,
# sixth sitting). Five rounds.
experiment-f-gang-ungate:
	FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3w1 admit3w8" hack/experiment-f-gang-queue.sh 5

# Gangs admitted by removing their pods' gates (eight at a time) beside
# Jobs created suspended and admitted by unsuspending them, as Kueue
# admits a batch Job: the scheduler's failed attempts, and how soon the
# gang runs whole once one job's nodes free (F, twenty-fifth part,
# seventh sitting). Three rounds.
experiment-f-gang-suspend:
	FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3w8 admit3s" hack/experiment-f-gang-queue.sh 3

# The same two arms on two fresh fleets in turn: the gang profile, then
# one whose controller-manager's client limits are tuned's (QPS 500,
# burst 1000; all else as gang), with each release's rest split at the
# gang's pods seen created and bound (F, twenty-fifth part, eighth
# sitting). Three rounds on each.
experiment-f-gang-suspend-kcm:
	FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3w8 admit3s" hack/experiment-f-gang-queue.sh 3
	PROFILE=scenarios/profiles/lever-cm-qps-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3w8 admit3s" hack/experiment-f-gang-queue.sh 3

# The same two arms on one fresh fleet that also keeps the apiserver's
# audit log (lever-cm-qps-audit-gang.yaml), so that each gang's part from
# its pods seen to them bound splits at their bindings, beside the
# scheduler's pod-group cycles and its client's waits (F, twenty-fifth
# part, ninth sitting). Three rounds.
experiment-f-gang-bind:
	PROFILE=scenarios/profiles/lever-cm-qps-audit-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3w8 admit3s" hack/experiment-f-gang-queue.sh 3

# The same with kube-scheduler's client limits raised to tuned's (QPS
# 1000, burst 2000; lever-cm-sched-qps-audit-gang.yaml): do QPS 50 and
# burst 100 pace the gang's bindings? (F, twenty-fifth part, tenth
# sitting.) Three rounds.
experiment-f-gang-bind-qps:
	PROFILE=scenarios/profiles/lever-cm-sched-qps-audit-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3w8 admit3s" hack/experiment-f-gang-queue.sh 3

# The same with only the scheduler's client burst raised, to 300, its QPS
# left at 50 (lever-cm-sched-burst-audit-gang.yaml): is a burst above
# twice the gang's size enough? (F, twenty-fifth part, eleventh sitting.)
# Three rounds.
experiment-f-gang-bind-burst:
	PROFILE=scenarios/profiles/lever-cm-sched-burst-audit-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3w8 admit3s" hack/experiment-f-gang-queue.sh 3

# Three suspended 100-pod gangs released at once beside one released
# alone, on the eleventh sitting's fleet (scheduler burst 300, QPS 50):
# does the burst that holds one gang's requests hold three's? (F,
# twenty-fifth part, twelfth sitting.) Three rounds.
experiment-f-gang-release:
	PROFILE=scenarios/profiles/lever-cm-sched-burst-audit-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3s admit3sr3" hack/experiment-f-gang-queue.sh 3

# The same on the tenth sitting's fleet (scheduler QPS 1000, burst
# 2000): what three gangs released at once cost without the client's
# pacing (F, twenty-fifth part, thirteenth sitting). Three rounds.
experiment-f-gang-release-qps:
	PROFILE=scenarios/profiles/lever-cm-sched-qps-audit-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3s admit3sr3" hack/experiment-f-gang-queue.sh 3

# The same with the scheduler's client burst at 700, its QPS left at 50
# (lever-cm-sched-burst700-audit-gang.yaml): is a burst above twice the
# pods of the gangs freed together enough? (F, twenty-fifth part,
# fourteenth sitting.) Three rounds.
experiment-f-gang-release-burst:
	PROFILE=scenarios/profiles/lever-cm-sched-burst700-audit-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3s admit3sr3" hack/experiment-f-gang-queue.sh 3

# The same with bursts between 300 and 700: 400 and 500, then 450 (F,
# twenty-fifth part, fifteenth, sixteenth and nineteenth sittings).
# Three rounds each.
experiment-f-gang-release-burst400 experiment-f-gang-release-burst450 experiment-f-gang-release-burst500: experiment-f-gang-release-burst%:
	PROFILE=scenarios/profiles/lever-cm-sched-burst$*-audit-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3s admit3sr3" hack/experiment-f-gang-queue.sh 3

# Five gangs freed together beside three on the burst of 700: is the
# burst five need less than twice their pods, the limiter refilling while
# the scheduler's cycles run one after another? (F, twenty-fifth part,
# seventeenth sitting.) Three rounds.
experiment-f-gang-release-five:
	PROFILE=scenarios/profiles/lever-cm-sched-burst700-audit-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3sr3 admit5sr5" hack/experiment-f-gang-queue.sh 3

# The same on a burst of 1000, twice the five gangs' pods (F, twenty-fifth
# part, eighteenth sitting). Three rounds.
experiment-f-gang-release-five-burst1000:
	PROFILE=scenarios/profiles/lever-cm-sched-burst1000-audit-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3sr3 admit5sr5" hack/experiment-f-gang-queue.sh 3

# Seven gangs freed together beside five on the same burst of 1000, 1.43
# times the seven's pods, as 700 was for five: does the share of their
# pods the burst must cover hold as the gangs grow? (F, twenty-fifth
# part, twentieth sitting.) Three rounds.
experiment-f-gang-release-seven:
	PROFILE=scenarios/profiles/lever-cm-sched-burst1000-audit-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit5sr5 admit7sr7" hack/experiment-f-gang-queue.sh 3

# The same on the burst of 700, the pods of 3.5 gangs: do the scheduler's
# cycles, one after another, spread seven gangs' requests enough for it?
# Then on 850, between 700 and 1,000. (F, twenty-fifth part,
# twenty-first and twenty-second sittings.) Three rounds each.
experiment-f-gang-release-seven-burst700 experiment-f-gang-release-seven-burst850: experiment-f-gang-release-seven-burst%:
	PROFILE=scenarios/profiles/lever-cm-sched-burst$*-audit-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit5sr5 admit7sr7" hack/experiment-f-gang-queue.sh 3

# Three, five and seven gangs freed together on the burst of 850, each
# run's scheduler tokens counted from the audit log (train's
# schedulerTokens) rather than read from the limiter's summed waits: what
# does each set of gangs draw? (F, twenty-fifth part, twenty-third
# sitting.) Three rounds.
experiment-f-gang-release-tokens:
	PROFILE=scenarios/profiles/lever-cm-sched-burst850-audit-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit3sr3 admit5sr5 admit7sr7" hack/experiment-f-gang-queue.sh 3

# Seven and nine gangs freed together on a burst of 2,000, above twice
# the pods of either, their tokens counted rather than drawn to the
# burst (F, twenty-fifth part, twenty-fifth sitting). Three rounds.
experiment-f-gang-release-nine:
	PROFILE=scenarios/profiles/lever-cm-sched-burst2000-audit-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit7sr7 admit9sr9" hack/experiment-f-gang-queue.sh 3

# The same, four rounds, with the machine's speed sampled in every run
# (train's hostSpeed): does the scheduler's CPU for the same gangs follow
# how fast the machine ran? (F, twenty-fifth part, twenty-sixth sitting.)
experiment-f-gang-release-speed:
	PROFILE=scenarios/profiles/lever-cm-sched-burst2000-audit-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit7sr7 admit9sr9" hack/experiment-f-gang-queue.sh 4

# F, twenty-ninth sitting: the speed probe alone on an idle machine, and
# beside a shell loop and a memory stream held to the other CPU (no fleet).
experiment-host-probe:
	hack/experiment-host-probe.sh $(or $(ROUNDS),8)

# F, thirtieth sitting: seven gangs freed together as in the twenty-eighth,
# with a probe of its own process started beside each train's start.
experiment-f-gang-release-start-probe:
	PROBE_BESIDE=1 PROFILE=scenarios/profiles/lever-cm-sched-burst2000-audit-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit7sr7" hack/experiment-f-gang-queue.sh 3

# F, thirty-first sitting: this checkout's build and REV's (48ea46b, the
# twenty-eighth's) run the same load and train on one fleet, alternating.
experiment-host-probe-binaries:
	REV=$(or $(REV),48ea46b) hack/experiment-host-probe-binaries.sh $(or $(ROUNDS),4)

# F, thirty-second sitting: the same 900 nodes freed to nine gangs of 100
# or eighteen of 50, three rounds on one 1,000-node fleet (burst 2,000):
# do smaller gangs cost the scheduler more, or start sooner?
experiment-f-gang-release-sizes:
	PROFILE=scenarios/profiles/lever-cm-sched-burst2000-audit-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit9sr9 admit18sr18p50" hack/experiment-f-gang-queue.sh 3

# F's thirty-seventh sitting: the same with the audit log holding the
# lists and watches of pods and nodes: whose pod watches end early, and
# does kwok list pods again?
experiment-f-gang-release-sizes-watch:
	PROFILE=scenarios/profiles/lever-cm-sched-burst2000-audit-watch-gang.yaml FILL=900 STREAM=100 WAIT=30 RELEASE=1 ARMS="admit9sr9 admit18sr18p50" hack/experiment-f-gang-queue.sh 3
