#!/bin/bash
# Runs a command and prints, per process, the CPU (user + system) spent
# while it ran, divided by a count: where a hold's or a booking's machine CPU
# goes (BENCHMARKS.md). PostgreSQL's backends are grouped by database, its
# other processes by role; Encore, Mailpit and Redis by name; the command
# itself (with its children) as "command". Loopback only; reads /proc.
#
#   dev/bench/cpu-split.sh COUNT -- COMMAND [ARGS...]
#
# For example, 4,000 holds against a running `encore dev`:
#   dev/bench/cpu-split.sh 4000 -- env ENCORE_BENCH_URL=http://127.0.0.1:8080 \
#     ENCORE_BENCH_EVENT=evt_demo_stadium ./system.test -test.run '^$' \
#     -test.bench '^BenchmarkHoldsThroughARunningStack$' -test.benchtime 4000x
set -euo pipefail
count=$1
shift
[ "${1:-}" = "--" ] && shift
hz=$(getconf CLK_TCK)

snapshot() {
	for p in $(pgrep -f 'postgres|redis-server|encore|mailpit' || true); do
		[ -r "/proc/$p/stat" ] || continue
		ticks=$(awk '{sub(/^[0-9]+ \([^)]*\) /, ""); print $12 + $13}' "/proc/$p/stat" 2>/dev/null) || continue
		cmd=$(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null) || continue
		case "$cmd" in
		"postgres: "*) key=$(echo "$cmd" | awk '{ if ($3 ~ /\(/ || NF < 4) print "postgres-" $2 "-" $3; else print "postgres-db-" $3 }') ;;
		*) key=$(awk '{gsub(/[()]/, "", $2); print $2}' "/proc/$p/stat") ;;
		esac
		echo "$key $ticks"
	done | awk '{t[$1] += $2} END {for (k in t) print k, t[k]}' | sort
}

before=$(mktemp)
after=$(mktemp)
own0=$(mktemp)
own1=$(mktemp)
trap 'rm -f "$before" "$after" "$own0" "$own1"' EXIT
# The command's own CPU, children included, is the change in the second
# line of `times` around it (run in this shell: a subshell's children
# would be its own; the snapshots' children fall outside).
children() { awk 'NR == 2 {for (i = 1; i <= 2; i++) {split($i, a, /[ms]/); s += a[1] * 60 + a[2]}; print s}' "$1"; }
snapshot > "$before"
times > "$own0"
"$@"
times > "$own1"
snapshot > "$after"
self=$(awk -v a="$(children "$own1")" -v b="$(children "$own0")" 'BEGIN {print a - b}')
echo "CPU a unit of $count, ms:"
{
	join -a2 -e0 -o 0,1.2,2.2 "$before" "$after" | awk -v hz="$hz" -v n="$count" '$3 > $2 {printf "%-32s %8.3f\n", $1, ($3 - $2) * 1000 / hz / n}'
	awk -v s="$self" -v n="$count" 'BEGIN {printf "%-32s %8.3f\n", "command", s * 1000 / n}'
} | sort -k2 -nr
