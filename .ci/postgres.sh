# Sourced by .ci/run: start_postgres starts a throwaway PostgreSQL server
# on 127.0.0.1 for the store tests and exports RUNNER_TEST_POSTGRES;
# stop_postgres stops it and removes its data. The server runs as a
# non-root user (postgres when run as root), as initdb and postgres refuse
# to run as root.

# pg_bindir prints the directory of initdb and pg_ctl, installing
# PostgreSQL when neither is on PATH nor under /usr/lib/postgresql.
pg_bindir() {
	local dir
	if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
		dirname "$(readlink -f "$(command -v initdb)")"
		return
	fi
	dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	if [ -z "$dir" ]; then
		apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql >&2
		dir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
	fi
	echo "$dir"
}

# pg_free_port prints the first port from 55432 on that nothing listens on.
pg_free_port() {
	local port=55432
	while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
		port=$((port + 1))
	done
	echo "$port"
}

# pg_as runs a command as the server's user.
pg_as() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

start_postgres() {
	local bin port
	bin=$(pg_bindir)
	if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
		useradd --system --no-create-home postgres
	fi
	PG_DATA=$(mktemp -d)
	[ "$(id -u)" = 0 ] && chown postgres "$PG_DATA"
	PG_CTL="$bin/pg_ctl"
	port=$(pg_free_port)
	pg_as "$bin/initdb" -D "$PG_DATA/data" -U postgres --auth=trust -E UTF8 >/dev/null
	pg_as "$PG_CTL" -D "$PG_DATA/data" -l "$PG_DATA/log" -w \
		-o "-h 127.0.0.1 -p $port -k $PG_DATA -c fsync=off" start >/dev/null
	"$bin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -c 'CREATE DATABASE runner_test'
	export RUNNER_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port/runner_test?sslmode=disable"
	echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
}

stop_postgres() {
	if [ -n "${PG_DATA:-}" ]; then
		pg_as "$PG_CTL" -D "$PG_DATA/data" -m fast -w stop >/dev/null || cat "$PG_DATA/log" >&2
		rm -rf "$PG_DATA"
		PG_DATA=
	fi
}
