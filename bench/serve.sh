#!/usr/bin/env bash
# Measures runner serve (SQLite, then the memory store) and LangGraph.js's
# own Agent Server (in-memory) with the same client, BenchmarkServe, over
# loopback. Needs Node.js and npm (installs bench/peer/serve's pinned
# packages on first use); without them it measures runner alone.
set -euo pipefail
cd "$(dirname "$0")"
ulimit -n "$(ulimit -Hn)"
bench() { go test . -run '^$' -bench 'BenchmarkServe$' -benchtime 1x -count 1 | grep -E 'serve_test.go|FAIL' || true; }
echo "== runner serve, sqlite"; bench
echo "== runner serve, memory"; BENCH_SERVE_STORE=memory: bench
command -v npm >/dev/null || { echo "no npm: LangGraph.js not measured"; exit 0; }
[ -d peer/serve/node_modules ] || (cd peer/serve && npm install --no-audit --no-fund --loglevel=error)
port=27390
(cd peer/serve && exec node serve.mjs "$port" >peer.log 2>&1) &
peer=$!
trap 'kill "$peer" 2>/dev/null || true' EXIT
for _ in $(seq 60); do curl -sf "http://127.0.0.1:$port/ok" >/dev/null && break; sleep 1; done
echo "== LangGraph.js Agent Server, in-memory"
BENCH_SERVE_URL="http://127.0.0.1:$port" BENCH_SERVE_PID="$peer" bench
