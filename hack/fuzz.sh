#!/usr/bin/env bash
# Runs every fuzz target of the root module, one after the other, each for
# the time given as the first argument (default 60s; `make test` gives 10s),
# and ends with one line: how many targets ran, how many inputs they tried
# in all, the fuzzing time and how many failed.
#
#   hack/fuzz.sh 5m            # every target for 5 minutes
#   hack/fuzz.sh 30s FuzzBodies   # only targets whose name matches
#
# A failing input is written by `go test` to the package's
# testdata/fuzz/<target>/ folder: commit it with the fix, and it runs in
# every `go test` from then on. Minimizing a new interesting input is
# bounded (100 runs) so that short runs fuzz rather than minimize.
#
# Go's fuzzing coordinator (up to Go 1.26, Go issue 75804) can report its
# own stop at the end of -fuzztime as a failure, "context deadline
# exceeded", on a busy machine: a worker still running when the deadline
# fires. Such a run found nothing: it wrote no failing input and the only
# failure it prints is that line. It is counted as a pass and named in the
# totals (stop_races=N); any other failure fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${1:-60s}
only=${2:-}

targets=()
while IFS= read -r line; do
	file=${line%%:*}
	name=${line#*:func }
	name=${name%%(*}
	[[ -z $only || $name =~ $only ]] || continue
	targets+=("./$(dirname "$file") $name")
done < <(grep -rn --include='*_test.go' --exclude-dir=_output --exclude-dir=hack -o '^func Fuzz[A-Za-z0-9_]*(' . | sed 's|^\./||; s|:[0-9]*:|:|' | sort)

if [[ ${#targets[@]} -eq 0 ]]; then
	echo "fuzz: no target matches ${only:-anything}" >&2
	exit 1
fi

# stop_race tells whether the log of a failed run of target $1 is only
# the coordinator's stop race: one failure, "context deadline exceeded",
# and no new failing input in testdata/fuzz/$1 (listing before: $2).
stop_race() {
	local name=$1 before=$2 log=$3 dir=$4
	[[ $(grep -c '^--- FAIL' "$log") -eq 1 ]] || return 1
	grep -A1 "^--- FAIL: ${name} (" "$log" | tail -1 | grep -qx '    context deadline exceeded' || return 1
	! grep -q 'Failing input written to\|failure while testing seed corpus\|panic:' "$log" || return 1
	[[ $(corpus "$dir") == "$before" ]]
}

# corpus lists a target's committed inputs.
corpus() { ls -A "$1" 2>/dev/null || true; }

inputs=0
failed=0
races=0
start=$SECONDS
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	echo "fuzz: $pkg $name for $fuzztime"
	log=$(mktemp)
	dir="$pkg/testdata/fuzz/$name"
	before=$(corpus "$dir")
	if go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 100x >"$log" 2>&1; then
		status=ok
	elif stop_race "$name" "$before" "$log" "$dir"; then
		status="ok (the fuzzing coordinator reported its own stop at the deadline; no failing input)"
		races=$((races + 1))
	else
		status=FAILED
		failed=$((failed + 1))
		cat "$log"
	fi
	n=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
	inputs=$((inputs + ${n:-0}))
	echo "fuzz: $pkg $name: $status, ${n:-0} inputs"
	rm -f "$log"
done
echo "fuzz_targets=${#targets[@]} inputs=$inputs seconds=$((SECONDS - start)) fuzztime_each=$fuzztime failed=$failed stop_races=$races"
[[ $failed -eq 0 ]]
