#!/bin/bash
# Measures encore dev time to ready and memory (see BENCHMARKS.md); expects /tmp/encore built by
# go build -o /tmp/encore ./cmd/encore, and nothing else on ports 8080, 8233, 54329, 63799.
# time to ready of encore dev: $1 = data dir, $2 = label
start=$(date +%s.%N)
ENCORE_DATA_DIR=$1 /tmp/encore dev > /tmp/dev-$2.log 2>&1 &
pid=$!
until curl -sf localhost:8080/readyz >/dev/null 2>&1; do sleep 0.05; done
end=$(date +%s.%N)
ui=$(curl -s -o /dev/null -w "%{http_code}" localhost:8233/)
sleep 3
rss=$(ps -o rss= -p $pid)
pm=$(head -1 $1/postgres/postmaster.pid 2>/dev/null || head -1 /var/tmp/encore-*/postgres/postmaster.pid)
pgpss=0
for p in $pm $(pgrep -P $pm); do v=$(awk '/^Pss:/ {print $2}' /proc/$p/smaps_rollup 2>/dev/null); pgpss=$((pgpss + ${v:-0})); done
rdrss=$(ps -eo rss,cmd | grep "redis-server 127.0.0.1:63799" | grep -v grep | awk '{s+=$1} END {print s}')
echo "$2: ready in $(echo "$end - $start" | bc) s; Web UI $ui; encore RSS $((rss/1024)) MiB; PostgreSQL PSS $((pgpss/1024)) MiB; Redis RSS $((rdrss/1024)) MiB"
kill -INT $pid; wait $pid
echo "exit $?"
