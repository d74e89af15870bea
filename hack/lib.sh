# Shared by the hack/ scripts that drive a bare control plane: source it
# from the repository's root, after `set -euo pipefail`.

# Builds GhostFleet into bin/ghostfleet (make build: the control plane's
# compile flags) and sets bin, set_dir (the cached control-plane binaries
# `ghostfleet up` builds; empty before the first up) and kwokctl.
gf_build() {
	bin=$PWD/bin/ghostfleet
	make -s build
	gf_set_dir
}

gf_set_dir() {
	set_dir=$(ls -d "${XDG_CACHE_HOME:-$HOME/.cache}"/ghostfleet/bin/k8s-* 2>/dev/null | head -1 || true)
	kwokctl=$set_dir/kwokctl
}

# Builds the control plane's binaries and kwokctl, which `up` leaves to
# be built on demand, if missing (after gf_build).
gf_kwokctl() {
	"$bin" check --build kube-apiserver,kube-controller-manager,kube-scheduler,etcd,kwok,kwokctl >/dev/null || true
	gf_set_dir
	[ -x "$kwokctl" ] || { echo "hack/lib.sh: kwokctl could not be built (see: $bin check --build kwokctl)" >&2; exit 1; }
}

# new_run_dir KIND: a new, absolute results/KIND-<time> folder in dir.
new_run_dir() {
	dir=${GHOSTFLEET_RESULTS:-results}/$1-$(date -u +%Y%m%d-%H%M%S)
	while [ -e "$dir" ]; do dir=$dir-1; done
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
}

# bare_control_plane NAME: kwokctl's binary runtime with the cached
# binaries and no kwok controller of its own (what attach meets on any
# cluster), every component on 127.0.0.1 only; its kwokctl configuration
# is kept in dir.
bare_control_plane() {
	local bind=$dir/kwokctl-bind.yaml
	printf 'apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\noptions:\n  bindAddress: 127.0.0.1\n' >"$bind"
	"$kwokctl" --name "$1" --config "$bind" create cluster --runtime binary --disable kwok-controller --wait 120s \
		--kube-apiserver-binary "$set_dir/kube-apiserver" --kube-controller-manager-binary "$set_dir/kube-controller-manager" \
		--kube-scheduler-binary "$set_dir/kube-scheduler" --etcd-binary "$set_dir/etcd" --kwok-controller-binary "$set_dir/kwok"
}

# snapshot_of LOG: the SLO snapshot (`ghostfleet snapshot --run`) of the
# run whose text output LOG holds ("run record: …/<id>"), on fleet $name,
# and its report.html (`ghostfleet report`: the newest snapshot).
snapshot_of() {
	local id
	id=$(sed -n 's|^run record: .*/||p' "$1" | tail -1)
	[ -n "$id" ] || { echo "snapshot_of: no run record in $1" >&2; return 1; }
	"$bin" --name "$name" snapshot --run "$id" && "$bin" report
}

# fresh_fleet PROFILE NODES [UP-FLAGS...]: fleet $name deleted if it
# exists, then brought up anew with that profile and node count (one fresh
# fleet per profile, as the experiments' methods ask). PROFILE is a
# built-in profile's name, or a profile file's path (ending in .yaml).
fresh_fleet() {
	local flag=--profile
	[[ $1 != *.yaml ]] || flag=--profile-file
	"$bin" --name "$name" clean >/dev/null 2>&1 || true
	"$bin" --name "$name" up "$flag" "$1" --nodes "$2" "${@:3}"
}
