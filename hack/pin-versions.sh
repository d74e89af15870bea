#!/usr/bin/env bash
# Regenerates the pinned build modules in fleet/binaries/modules from four
# versions: Kubernetes (every k8s.io staging module is replaced with the
# matching v0.MINOR.PATCH, the list taken from k8s.io/kubernetes's own
# go.mod), etcd, kwok and Prometheus's Go module version; a fifth, optional,
# pins metrics-server (its own module, built only for up --metrics-server),
# a sixth Karpenter (its kwok provider, built only for up --autoscaler
# karpenter; v1.14.0 because v1.15.0 declares go 1.26.9, newer than the
# go1.26.8 CI builds with under GOTOOLCHAIN=local).
#   hack/pin-versions.sh v1.36.3 v3.6.16 v0.8.0 v0.316.0 [v0.8.0 [v1.14.0]]
set -euo pipefail
[ $# -ge 4 ] && [ $# -le 6 ] || { echo "usage: $0 K8S_VERSION ETCD_VERSION KWOK_VERSION PROMETHEUS_MODULE_VERSION [METRICS_SERVER_VERSION [KARPENTER_VERSION]]" >&2; exit 2; }
k8s=$1 etcd=$2 kwok=$3 prom=$4 ms=${5:-} karp=${6:-}
staging="v0.${k8s#v1.}"
out="$(cd "$(dirname "$0")/.." && pwd)/fleet/binaries/modules"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOWORK=off GOFLAGS=-mod=mod

kdir=$(cd "$work" && go mod download -json "k8s.io/kubernetes@$k8s" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
mkdir "$work/cp" "$work/prom" "$work/ms" "$work/karp"

cd "$work/cp"
printf 'module ghostfleet.local/controlplane\n\ngo 1.26.0\n\nreplace (\n' > go.mod
sed -n '/^replace (/,/^)/p' "$kdir/go.mod" | awk -v v="$staging" '/=> \.\/staging/ {print "\t" $1 " => " $1 " " v}' >> go.mod
printf ')\n' >> go.mod
cat > tools.go <<'GO'
//go:build tools

package controlplane

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwokctl"
)
GO
go mod edit -require="k8s.io/kubernetes@$k8s" -require="go.etcd.io/etcd/server/v3@$etcd" \
  -require="go.etcd.io/etcd/etcdctl/v3@$etcd" -require="go.etcd.io/etcd/etcdutl/v3@$etcd" -require="sigs.k8s.io/kwok@$kwok"
go mod tidy
cp go.mod "$out/controlplane.mod"; cp go.sum "$out/controlplane.sum"

cd "$work/prom"
printf 'module ghostfleet.local/prometheus\n\ngo 1.26.0\n' > go.mod
printf '//go:build tools\n\npackage prometheus\n\nimport _ "github.com/prometheus/prometheus/cmd/prometheus"\n' > tools.go
go mod edit -require="github.com/prometheus/prometheus@$prom"
go mod tidy
cp go.mod "$out/prometheus.mod"; cp go.sum "$out/prometheus.sum"

if [ -n "$ms" ]; then
  cd "$work/ms"
  printf 'module ghostfleet.local/metricsserver\n\ngo 1.26.0\n' > go.mod
  printf '//go:build tools\n\npackage metricsserver\n\nimport _ "sigs.k8s.io/metrics-server/cmd/metrics-server"\n' > tools.go
  go mod edit -require="sigs.k8s.io/metrics-server@$ms"
  go mod tidy
  cp go.mod "$out/metricsserver.mod"; cp go.sum "$out/metricsserver.sum"
  echo "pinned: metrics-server $ms"
fi
if [ -n "$karp" ]; then
  cd "$work/karp"
  printf 'module ghostfleet.local/karpenter\n\ngo 1.26.0\n' > go.mod
  printf '//go:build tools\n\npackage karpenter\n\nimport _ "sigs.k8s.io/karpenter/kwok"\n' > tools.go
  go mod edit -require="sigs.k8s.io/karpenter@$karp"
  go mod tidy
  cp go.mod "$out/karpenter.mod"; cp go.sum "$out/karpenter.sum"
  echo "pinned: karpenter $karp"
fi
echo "pinned: kubernetes $k8s (staging $staging), etcd $etcd, kwok $kwok, prometheus module $prom"
echo "run 'go test ./fleet/binaries' and 'ghostfleet check'; the cache folder name changes with the versions"
