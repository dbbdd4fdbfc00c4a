#!/usr/bin/env bash
# Builds the container runtime of a real kubelet node: containerd, its runc
# shim (containerd-shim-runc-v2) and ctr from github.com/containerd/containerd/v2
# (the version this module's go.mod pins), into OUT (default
# _output/containerd/bin). runc is Debian's (hack/deps.sh installs it).
#
# One fixed set of build flags: any change of flags or of this module's
# dependencies is a full rebuild, so the stamp file records both and the
# script does nothing when the binaries are current.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../_output/containerd/bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)

version=$(cd "$here" && go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
export CGO_ENABLED=0
export GOFLAGS=-buildvcs=false
flags=(-trimpath -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$version")

bins=(containerd containerd-shim-runc-v2 ctr)
pkgs=(github.com/containerd/containerd/v2/cmd/containerd
  github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
  github.com/containerd/containerd/v2/cmd/ctr)

stamp_key=$( {
  go version
  echo "CGO_ENABLED=$CGO_ENABLED GOFLAGS=$GOFLAGS ${flags[*]}"
  cat "$here/go.mod" "$here/go.sum" "$0"
} | sha256sum | cut -d' ' -f1)
stamp=$out/.containerd-bins.stamp

current=1
for b in "${bins[@]}"; do [[ -x $out/$b ]] || current=0; done
if [[ $current == 1 && -f $stamp && $(cat "$stamp") == "$stamp_key" ]]; then
  echo "containerd-bins: current in $out"
  exit 0
fi

log=$out/../containerd-bins.log
echo "containerd-bins: building ${bins[*]} $version into $out (cold: about 2 minutes on 2 cores; log: $log)"
rm -f "$stamp"
start=$(date +%s)
cd "$here"
if ! go build "${flags[@]}" -o "$out/" "${pkgs[@]}" >"$log" 2>&1; then
  echo "containerd-bins: build failed; last lines of $log:" >&2
  tail -20 "$log" >&2
  exit 1
fi
echo "$stamp_key" >"$stamp"
echo "containerd-bins: built in $(($(date +%s) - start)) s"
"$out/containerd" --version
