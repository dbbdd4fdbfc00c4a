#!/usr/bin/env bash
# Builds the developer tools pinned in hack/tools/go.mod (controller-gen,
# staticcheck) into OUT (default _output/tools), and does nothing when they
# are current.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../_output/tools}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export GOFLAGS=-buildvcs=false
tools=(controller-gen staticcheck)
pkgs=(sigs.k8s.io/controller-tools/cmd/controller-gen honnef.co/go/tools/cmd/staticcheck)
key=$( { go version; cat "$here/go.mod" "$here/go.sum" "$0"; } | sha256sum | cut -d' ' -f1)
stamp=$out/.tools.stamp
current=1
for t in "${tools[@]}"; do [[ -x $out/$t ]] || current=0; done
if [[ $current == 1 && -f $stamp && $(cat "$stamp") == "$key" ]]; then
  exit 0
fi
echo "tools: building ${tools[*]} into $out (about 1 minute cold)"
cd "$here"
go build -o "$out/" "${pkgs[@]}"
echo "$key" >"$stamp"
