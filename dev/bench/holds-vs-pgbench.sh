#!/bin/bash
# Holds through HTTP against a fresh `encore dev` (fsync on, every plane in one process), compared
# in the same run with pgbench TPC-B on the same PostgreSQL cluster (see BENCHMARKS.md). pgbench
# runs before and after the holds and the fraction is taken against their mean: on a shared
# machine the speed drifts within minutes, and one pgbench run on one side of the holds was off
# by a fifth at times. Loopback only; it stops everything it started.
#
# Beside them, on the same cluster, a hold's own SQL without HTTP, Go or Redis: pgbench runs
# api/testdata/hold.sql (the hold's statements, in its round trips) on evt_floor, a copy of the
# stadium (floor-event.sql), as many holds as the HTTP run's (rounded up to a multiple of 16),
# so the figure splits the distance to TPC-B between the database's share of a hold and the
# rest of the request.
#
#   dev/bench/holds-vs-pgbench.sh [holds (default 4000)]
#
# Expects nothing else on ports 8080, 8233, 9090, 54329 and 63799, and PostgreSQL's binaries
# (pgbench among them) under /usr/lib/postgresql (the ones `encore dev` uses).
set -euo pipefail
holds=${1:-4000}
cd "$(dirname "$0")/../.."
work=$(mktemp -d /tmp/encore-hvp.XXXXXX)
pg=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
go build -trimpath -o "$work/encore" ./cmd/encore
go test -c -trimpath -o "$work/system.test" ./system

ENCORE_DATA_DIR=$work/data ENCORE_ROOM_JOIN_IP_PER_MINUTE=10000000 ENCORE_HOLD_RATE_PER_MINUTE=100000 \
	setsid "$work/encore" dev > "$work/dev.log" 2>&1 < /dev/null &
dev=$!
stop() {
	kill -INT "$dev" 2>/dev/null || true
	for _ in $(seq 1 60); do kill -0 "$dev" 2>/dev/null || break; sleep 0.5; done
	kill -9 "$dev" 2>/dev/null || true
	rm -rf "$work/data" "$work/encore" "$work/system.test" # the log stays, for a failed run
}
trap stop EXIT
for _ in $(seq 1 240); do curl -sf http://127.0.0.1:8080/healthz > /dev/null 2>&1 && break; sleep 0.5; done
curl -sf http://127.0.0.1:8080/healthz > /dev/null || { echo "encore dev did not become healthy; see $work/dev.log"; exit 1; }
sleep 5

psql=("$pg/psql" -h 127.0.0.1 -p 54329 -U postgres -q)
"${psql[@]}" -c "DROP DATABASE IF EXISTS pgbench_ceiling" -c "CREATE DATABASE pgbench_ceiling" > /dev/null 2>&1
"$pg/pgbench" -h 127.0.0.1 -p 54329 -U postgres -i -q -s 16 pgbench_ceiling > /dev/null 2>&1
tps() { "$pg/pgbench" -h 127.0.0.1 -p 54329 -U postgres -c 16 -j 2 -T 15 pgbench_ceiling 2>&1 | awk '/^tps =/ {print $3}'; }

before=$(tps)
line=$(ENCORE_BENCH_URL=http://127.0.0.1:8080 ENCORE_BENCH_EVENT=evt_demo_stadium "$work/system.test" -test.run '^$' \
	-test.bench '^BenchmarkHoldsThroughARunningStack$' -test.benchtime "${holds}x" 2>&1 | grep '^Benchmark')
after=$(tps)
rate=$(echo "$line" | awk '{for (i = 1; i < NF; i++) if ($(i+1) == "holds/s") print $i}')
echo "$line"
awk -v r="$rate" -v b="$before" -v a="$after" 'BEGIN {
	printf "holds/s %.1f; pgbench TPC-B %.0f tps before, %.0f after; holds / pgbench %.3f\n", r, b, a, r / ((a + b) / 2) }'

# The hold's SQL alone, while the stack idles (its outbox relay still publishes the rows the
# replica writes, as it would the holds').
"${psql[@]}" -d encore -v ON_ERROR_STOP=1 -f dev/bench/floor-event.sql > /dev/null
floor=$("$pg/pgbench" -h 127.0.0.1 -p 54329 -U postgres -n -M prepared -c 16 -j 2 -t $(((holds + 15) / 16)) -D locked=0 \
	-D event=evt_floor -D sections=sec_floor -f api/testdata/hold.sql encore 2>&1 | awk '/^tps =/ {print $3}') || true
if [ -n "$floor" ]; then
	awk -v r="$rate" -v b="$before" -v a="$after" -v f="$floor" 'BEGIN {
		printf "a hold'"'"'s SQL alone by pgbench %.0f tps, %.3f of TPC-B; the holds through HTTP %.3f of it\n", f, f / ((a + b) / 2), r / f }'
else
	echo "the hold's SQL by pgbench failed: run it by hand (see api/testdata/hold.sql)"
fi
"${psql[@]}" -c "DROP DATABASE pgbench_ceiling" > /dev/null
