#!/usr/bin/env bash
# Builds the Kubernetes binaries the tests and virt-local run: the control
# plane (kube-apiserver, kube-scheduler, kube-controller-manager), the kubelet
# of a real node (k8s.io/kubernetes v1.37.2) and etcd (v3.7.0), into OUT
# (default _output/bin).
#
# One fixed set of build flags: any change of flags or of this module's
# dependencies is a full rebuild (about 16 minutes on 2 cores with the kubelet), so the stamp
# file records both and the script does nothing when the binaries are current.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../_output/bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)

k8s_version=v1.37.2
ldflags="-s -w"
ldflags+=" -X k8s.io/component-base/version.gitVersion=$k8s_version"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1"
ldflags+=" -X k8s.io/component-base/version.gitMinor=37"
ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
ldflags+=" -X k8s.io/component-base/version.buildDate=2026-01-01T00:00:00Z"

export CGO_ENABLED=0
export GOFLAGS=-buildvcs=false
flags=(-trimpath -ldflags "$ldflags")

bins=(kube-apiserver kube-scheduler kube-controller-manager kubelet etcd)
pkgs=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler
  k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubelet ./etcd)

stamp_key=$( {
  go version
  echo "CGO_ENABLED=$CGO_ENABLED GOFLAGS=$GOFLAGS ${flags[*]}"
  cat "$here/go.mod" "$here/go.sum" "$here/etcd/main.go" "$0"
} | sha256sum | cut -d' ' -f1)
stamp=$out/.kube-bins.stamp

current=1
for b in "${bins[@]}"; do [[ -x $out/$b ]] || current=0; done
if [[ $current == 1 && -f $stamp && $(cat "$stamp") == "$stamp_key" ]]; then
  echo "kube-bins: current in $out"
  exit 0
fi

log=$out/../kube-bins.log
echo "kube-bins: building ${bins[*]} into $out (cold: about 16 minutes on 2 cores; log: $log)"
rm -f "$stamp"
start=$(date +%s)
cd "$here"
if ! go build "${flags[@]}" -o "$out/" "${pkgs[@]}" >"$log" 2>&1; then
  echo "kube-bins: build failed; last lines of $log:" >&2
  tail -20 "$log" >&2
  exit 1
fi
echo "$stamp_key" >"$stamp"
echo "kube-bins: built in $(($(date +%s) - start)) s"
"$out/kube-apiserver" --version
"$out/kubelet" --version
"$out/etcd" --version | sed -n 1p  # sed reads to the end: head would end the pipe early (SIGPIPE under pipefail)
