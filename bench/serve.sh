#!/usr/bin/env bash
# Measures runner serve (SQLite, then the memory store) and LangGraph.js's
# own Agent Server (in-memory) with the same client, BenchmarkServe, over
# loopback. Needs Node.js and npm (installs bench/peer/serve's pinned
# packages on first use); without them it measures runner alone.
#
#   bench/serve.sh            every phase, runner then LangGraph.js
#   bench/serve.sh pairs [N]  the 32-client phase only, N rounds (5 by
#                             default) of runner on SQLite and LangGraph.js
#                             one after the other, in alternating order,
#                             each alone on the machine, each round's
#                             ratios and their median: the host's speed
#                             drifts within minutes, so a ratio is read
#                             from a pair measured together
set -euo pipefail
cd "$(dirname "$0")"
ulimit -n "$(ulimit -Hn)"
bench() { go test . -run '^$' -bench 'BenchmarkServe$' -benchtime 1x -count 1 | grep -E 'serve_test.go|FAIL' || true; }
port=27390

# start_peer starts LangGraph.js's server on $port, installing it first if
# need be, and waits for it to settle; stop_peer stops it.
peer=""
start_peer() {
	[ -d peer/serve/node_modules ] || (cd peer/serve && npm install --no-audit --no-fund --loglevel=error)
	(cd peer/serve && exec node serve.mjs "$port" >peer.log 2>&1) &
	peer=$!
	for _ in $(seq 60); do curl -sf "http://127.0.0.1:$port/ok" >/dev/null && { settle; return; }; sleep 1; done
	echo "LangGraph.js's server did not start: see bench/peer/serve/peer.log" >&2
	exit 1
}
# settle waits, up to 30 s, until the peer has used under a tenth of a
# core for five seconds running, and says what it used: Node.js is quiet
# for a second or two after its first answer, then busy for two (some
# 40 % of this machine's two cores), which would slow whatever ran then.
settle() {
	local a b i quiet=0 busy=""
	for i in $(seq 30); do
		a=$(cpu_ticks); sleep 1; b=$(cpu_ticks)
		busy="$busy $((b - a))"
		if [ $((b - a)) -lt 10 ]; then quiet=$((quiet + 1)); else quiet=0; fi
		[ "$quiet" -ge 5 ] && break
	done
	echo "LangGraph.js's server settled after ${i} s; CPU ticks a second:$busy" >&2
}
# cpu_ticks prints the CPU time the peer has used, in clock ticks (0
# without /proc).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$peer/stat" 2>/dev/null || echo 0; }
stop_peer() { [ -z "$peer" ] || { kill "$peer" 2>/dev/null || true; wait "$peer" 2>/dev/null || true; peer=""; }; }
trap stop_peer EXIT
on_peer() { BENCH_SERVE_URL="http://127.0.0.1:$port" BENCH_SERVE_PID="$peer" "$@"; }

if [ "${1:-}" = pairs ]; then
	command -v npm >/dev/null || { echo "pairs needs Node.js and npm" >&2; exit 2; }
	rounds=${2:-5}
	[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "usage: bench/serve.sh pairs [ROUNDS]" >&2; exit 2; }
	# phase prints runs/s and CPU ms a run of one 32-client phase.
	phase() {
		BENCH_SERVE_PHASE=32-concurrent bench | tee /dev/stderr |
			awk '/32-concurrent/ { for (i = 1; i < NF; i++) { if ($(i+1) == "runs/s") r = $i; if ($(i+1) == "ms" && $(i+2) == "CPU/run") c = $i }; print r, c }'
	}
	# theirs measures LangGraph.js's server, started for its phase alone.
	theirs() { start_peer >&2; BENCH_SERVE_RUNS=600 on_peer phase; stop_peer; }
	for i in $(seq "$rounds"); do
		if ((i % 2)); then
			ours=$(phase); theirs=$(theirs)
		else
			theirs=$(theirs); ours=$(phase)
		fi
		echo "$i $ours $theirs"
	done | awk '
		NF < 5 || $2 * $3 * $4 * $5 == 0 { print "round " $1 ": a phase failed (its output is above)"; failed = 1; next }
		{ n++; rs[n] = $2 / $4; cpu[n] = $5 / $3
		  printf "round %d: runner %s runs/s, %s ms a run; LangGraph.js %s runs/s, %s ms: %.1fx the runs/s, %.1fx less CPU\n", $1, $2, $3, $4, $5, rs[n], cpu[n] }
		function median(a, n,   i, j, t) {
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
		END { if (n) printf "median of %d rounds: %.1fx the runs/s, %.1fx less CPU a run\n", n, median(rs, n), median(cpu, n); exit failed }'
	exit 0
fi

echo "== runner serve, sqlite"; bench
echo "== runner serve, memory"; BENCH_SERVE_STORE=memory: bench
command -v npm >/dev/null || { echo "no npm: LangGraph.js not measured"; exit 0; }
start_peer
echo "== LangGraph.js Agent Server, in-memory"
on_peer bench
