#!/usr/bin/env bash
# Times `runner validate` of the shipped definitions as a whole process,
# against `runner --help` (process start-up) as the baseline of the same run.
# Prints the median wall time of each over RUNS runs, and their ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-21}
bin=$(mktemp -d)/runner
go build -o "$bin" ./cmd/runner

median_ms() { # command... ; prints the median wall time in ms
	local times=()
	"$@" >/dev/null 2>&1 || true # warm-up
	for _ in $(seq "$RUNS"); do
		local t0 t1
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1 || true
		t1=$(date +%s%N)
		times+=($(( (t1 - t0) / 1000 )))
	done
	printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}

v=$(median_ms "$bin" validate pipelines agents rules)
b=$(median_ms "$bin" --help)
echo "runner validate pipelines agents rules: ${v} ms (median of $RUNS)"
echo "runner --help (baseline):               ${b} ms"
awk -v v="$v" -v b="$b" 'BEGIN {printf "ratio: %.1fx\n", v/b}'
