#!/usr/bin/env bash
# Builds the developer tools pinned in hack/tools/go.mod (controller-gen,
# staticcheck) and hack/promtool/go.mod (Prometheus' promtool, in a module of
# its own to keep Prometheus' dependencies out of the others) into OUT
# (default _output/tools), and does nothing when they are current.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../_output/tools}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export GOFLAGS=-buildvcs=false
tools=(controller-gen staticcheck promtool)
pkgs=(sigs.k8s.io/controller-tools/cmd/controller-gen honnef.co/go/tools/cmd/staticcheck)
promtool=$here/../promtool
key=$( { go version; cat "$here/go.mod" "$here/go.sum" "$promtool/go.mod" "$promtool/go.sum" "$0"; } | sha256sum | cut -d' ' -f1)
stamp=$out/.tools.stamp
current=1
for t in "${tools[@]}"; do [[ -x $out/$t ]] || current=0; done
if [[ $current == 1 && -f $stamp && $(cat "$stamp") == "$key" ]]; then
  exit 0
fi
echo "tools: building ${tools[*]} into $out (about 6 minutes cold)"
cd "$here"
go build -o "$out/" "${pkgs[@]}"
cd "$promtool"
go build -o "$out/promtool" github.com/prometheus/prometheus/cmd/promtool
echo "$key" >"$stamp"
