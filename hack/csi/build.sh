#!/usr/bin/env bash
# Builds the upstream Kubernetes storage components that run next to
# virt-local's CSI driver, into OUT (default _output/bin):
#   - csi-provisioner (external-provisioner v5) and csi-resizer
#     (external-resizer), from the module in provisioner/ (Kubernetes v0.33
#     libraries, as those releases pin them);
#   - snapshot-controller and csi-snapshotter (external-snapshotter v8), from
#     the module in snapshotter/.
# Each module pins its versions in its go.mod; those releases' replace lines
# are copied there, which is why they are built from modules of our own
# rather than `go install`ed by version.
#
# One fixed set of build flags: any change of flags or of these modules'
# dependencies is a rebuild, so the stamp file records both and the script
# does nothing when the binaries are current.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../_output/bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)

export CGO_ENABLED=0
export GOFLAGS=-buildvcs=false

# binary, module folder, package, the module whose version it reports
builds=(
  "csi-provisioner provisioner github.com/kubernetes-csi/external-provisioner/v5/cmd/csi-provisioner github.com/kubernetes-csi/external-provisioner/v5"
  "csi-resizer provisioner github.com/kubernetes-csi/external-resizer/cmd/csi-resizer github.com/kubernetes-csi/external-resizer"
  "snapshot-controller snapshotter github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller github.com/kubernetes-csi/external-snapshotter/v8"
  "csi-snapshotter snapshotter github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter github.com/kubernetes-csi/external-snapshotter/v8"
)
bins=(csi-provisioner csi-resizer snapshot-controller csi-snapshotter)

stamp_key=$( {
  go version
  echo "CGO_ENABLED=$CGO_ENABLED GOFLAGS=$GOFLAGS"
  for m in provisioner snapshotter; do cat "$here/$m/go.mod" "$here/$m/go.sum"; done
  cat "$0"
} | sha256sum | cut -d' ' -f1)
stamp=$out/.csi-bins.stamp

current=1
for b in "${bins[@]}"; do [[ -x $out/$b ]] || current=0; done
if [[ $current == 1 && -f $stamp && $(cat "$stamp") == "$stamp_key" ]]; then
  echo "csi-bins: current in $out"
  exit 0
fi

log=$out/../csi-bins.log
echo "csi-bins: building ${bins[*]} into $out (cold: about 4 minutes on 2 cores; log: $log)"
rm -f "$stamp"
: >"$log"
start=$(date +%s)
for b in "${builds[@]}"; do
  read -r bin dir pkg mod <<<"$b"
  version=$(cd "$here/$dir" && go list -m -f '{{.Version}}' "$mod")
  # Each reports its release as its --version (the sidecars' main.version).
  if ! (cd "$here/$dir" && go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$out/$bin" "$pkg") >>"$log" 2>&1; then
    echo "csi-bins: build of $bin failed; last lines of $log:" >&2
    tail -20 "$log" >&2
    exit 1
  fi
done
echo "$stamp_key" >"$stamp"
echo "csi-bins: built in $(($(date +%s) - start)) s"
"$out/csi-provisioner" --version
"$out/csi-snapshotter" --version
