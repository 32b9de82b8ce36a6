#!/usr/bin/env bash
# Runs the 004 planner loop on runner and on LangGraph.js in the same run and
# prints µs per node step for each, with the ratio. Needs Node.js and npm
# (installs bench/peer's pinned packages on first use).
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-300}
[ -d peer/node_modules ] || (cd peer && npm install --no-audit --no-fund --loglevel=error)
go_out=$(go test . -run '^$' -bench 'BenchmarkStep' -benchtime "${RUNS}x" -count 1)
lg_out=$(cd peer && node fraud.mjs "$RUNS")
us() { awk -v k="$1" '$1 ~ k {for (i=1;i<=NF;i++) if ($(i+1)=="ns/step") printf "%.2f", $i/1000}' <<<"$go_out"; }
lg() { awk -v k="$1" '$1 == k {print $2}' <<<"$lg_out"; }
hand=$(us baseline-hand-loop); nostore=$(us engine-no-store); mem=$(us engine-memory)
sql=$(us 'engine-sqlite-2'); full=$(us engine-sqlite-full)
lgn=$(lg langgraph-no-checkpointer); lgs=$(lg langgraph-sqlite)
printf '%-34s %10s\n' "engine (µs per node step)" "mean"
printf '%-34s %10s\n' "hand-written Go loop" "$hand" "runner, no checkpoint" "$nostore" "runner, memory store" "$mem" \
  "runner, sqlite (WAL, sync=normal)" "$sql" "runner, sqlite (WAL, sync=full)" "$full" \
  "LangGraph.js, no checkpointer" "$lgn" "LangGraph.js, SqliteSaver (WAL)" "$lgs"
awk -v a="$lgn" -v b="$nostore" -v c="$lgs" -v d="$full" -v h="$hand" 'BEGIN {
  printf "LangGraph.js / runner, no checkpoint:         %.0fx\n", a/b
  printf "LangGraph.js / runner, sqlite WAL sync=full:  %.1fx\n", c/d
  printf "runner / hand loop, no checkpoint:             %.1fx\n", b/h }'
