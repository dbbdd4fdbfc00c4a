#!/usr/bin/env bash
# Builds the CNI plugins a local node's pod network uses: bridge, host-local
# (IPAM) and loopback from github.com/containernetworking/plugins (the
# version this module's go.mod pins), into OUT (default _output/cni/bin).
#
# One fixed set of build flags: any change of flags or of this module's
# dependencies is a full rebuild, so the stamp file records both and the
# script does nothing when the binaries are current.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../_output/cni/bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)

version=$(cd "$here" && go list -m -f '{{.Version}}' github.com/containernetworking/plugins)
export CGO_ENABLED=0
export GOFLAGS=-buildvcs=false
flags=(-trimpath -ldflags "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$version")

bins=(bridge host-local loopback)
pkgs=(github.com/containernetworking/plugins/plugins/main/bridge
  github.com/containernetworking/plugins/plugins/ipam/host-local
  github.com/containernetworking/plugins/plugins/main/loopback)

stamp_key=$( {
  go version
  echo "CGO_ENABLED=$CGO_ENABLED GOFLAGS=$GOFLAGS ${flags[*]}"
  cat "$here/go.mod" "$here/go.sum" "$0"
} | sha256sum | cut -d' ' -f1)
stamp=$out/.cni-bins.stamp

current=1
for b in "${bins[@]}"; do [[ -x $out/$b ]] || current=0; done
if [[ $current == 1 && -f $stamp && $(cat "$stamp") == "$stamp_key" ]]; then
  echo "cni-bins: current in $out"
  exit 0
fi

log=$out/../cni-bins.log
echo "cni-bins: building ${bins[*]} $version into $out (cold: about 90 s on 2 cores; log: $log)"
rm -f "$stamp"
start=$(date +%s)
cd "$here"
if ! go build "${flags[@]}" -o "$out/" "${pkgs[@]}" >"$log" 2>&1; then
  echo "cni-bins: build failed; last lines of $log:" >&2
  tail -20 "$log" >&2
  exit 1
fi
echo "$stamp_key" >"$stamp"
echo "cni-bins: built in $(($(date +%s) - start)) s"
