#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The branch's interfaces read by the field's tools rather than our own
# programs: numactl places a process's memory on node 0, migratepages
# moves it to node 1 and back, and numastat -p, /proc/PID/numa_maps,
# /proc/vmstat, perf stat and perf record of the migrate tracepoints and
# trace-cmd must all agree on what moved.  The tracefs example of
# Documentation/mm/migrate_stages.rst is run as written.  Each check
# whose tool is missing is a SKIP naming the tool; fewer than two nodes
# with memory SKIPs all.

dir=$(cd "$(dirname "$0")" && pwd)
tmp=${TMPDIR:-/tmp}/field_tools.$$
MIB=32
n=0 fails=0 skips=0 pid=

ok() { n=$((n + 1)); echo "ok $n $*"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n $*"; }
skip() { n=$((n + 1)); skips=$((skips + 1)); echo "ok $n # SKIP $*"; }
check() {	# check NAME CONDITION-COMMAND...
	name=$1; shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}
have() { command -v "$1" >/dev/null 2>&1; }
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

vmstat() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
# Pages of the process on node N, from numa_maps (every mapping).
maps_on() {
	tr ' ' '\n' <"/proc/$pid/numa_maps" |
		awk -F= -v k="N$1" '$1 == k { s += $2 } END { print s + 0 }'
}
# MiB of the process on node N, from numastat -p (its Total row).
numastat_on() {
	numastat -p "$pid" | awk -v c=$(($1 + 2)) '$1 == "Total" { print int($c) }'
}
ge() { [ "${1:-0}" -ge "$2" ]; }
# Sum of the NAME=N fields of a perf script or trace-cmd report.
field_sum() {
	tr ' ' '\n' <"$1" |
		awk -F= -v k="$2" '$1 == k { s += $2 } END { print s + 0 }'
}
# Every mm_migrate_batch line carries the mode, reason and stage fields.
batches_complete() {
	! grep mm_migrate_batch "$1" |
		grep -v 'reason=.*unmap=.*copy=.*remap=.*total=' | grep -q .
}
all_ge() { [ "${1:-0}" -ge "$2" ] && [ "${3:-0}" -ge "$4" ]; }	# A >= B && C >= D
within() { [ "${1:-0}" -ge "$2" ] && [ "${1:-0}" -le "$3" ]; }	# within X LO HI

echo "TAP version 13"
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root"; exit 4; }
nodes=$(cat /sys/devices/system/node/has_memory 2>/dev/null)
case "$nodes" in
0-[1-9]*|0,1*) ;;
*) echo "1..0 # SKIP needs nodes 0 and 1 with memory (have: ${nodes:-none})"; exit 4 ;;
esac
mkdir -p "$tmp"
echo "1..14"

if have numactl; then
	numactl --membind=0 "$dir/numa_hold" $MIB >"$tmp/hold" &
	pid=$!
else
	"$dir/numa_hold" $MIB >"$tmp/hold" &
	pid=$!
	echo "# numactl missing: the memory is where the kernel put it"
fi
i=0
until grep -q ready "$tmp/hold" 2>/dev/null || [ $i -ge 100 ]; do
	sleep 0.1; i=$((i + 1))
done
pages=$(awk '$1 == "ready" { print $2 }' "$tmp/hold")
[ -n "$pages" ] || { echo "not ok 1 numa_hold did not start"; exit 1; }

# 1-2: placement by numactl, as numa_maps and numastat see it.
if have numactl; then
	check "numactl --membind=0: numa_maps has the $pages pages on N0" \
		ge "$(maps_on 0)" "$pages"
else
	skip "numactl not installed"
fi
if have numastat; then
	check "numastat -p: at least $MIB MiB on node 0" ge "$(numastat_on 0)" $MIB
else
	skip "numastat not installed"
fi

# 3-7: migratepages 0 -> 1 under perf stat -e 'migrate:*'.
before=$(vmstat pgmigrate_success)
if have migratepages && have perf; then
	perf stat -x, -o "$tmp/stat" -e 'migrate:*' -a -- \
		migratepages "$pid" 0 1 >/dev/null 2>&1
elif have migratepages; then
	migratepages "$pid" 0 1
fi
moved=$(($(vmstat pgmigrate_success) - before))
if have migratepages; then
	check "migratepages 0 1: numa_maps has the $pages pages on N1" \
		ge "$(maps_on 1)" "$pages"
	check "pgmigrate_success grew by $moved >= $pages" ge "$moved" "$pages"
else
	skip "migratepages not installed"
	skip "migratepages not installed"
fi
if have numastat && have migratepages; then
	check "numastat -p: at least $MIB MiB on node 1" ge "$(numastat_on 1)" $MIB
else
	skip "numastat or migratepages not installed"
fi
count() { awk -F, -v e="$1" '$3 == e { print $1 + 0 }' "$tmp/stat"; }
if have perf && have migratepages; then
	folios=$(count migrate:mm_migrate_folio)
	batches=$(count migrate:mm_migrate_batch)
	echo "# perf stat: mm_migrate_folio=$folios mm_migrate_batch=$batches moved=$moved"
	check "perf stat: one mm_migrate_folio per page moved ($folios, $moved)" \
		within "$folios" "$pages" "$moved"
	check "perf stat: mm_migrate_batch fired ($batches, at most 512 pages each)" \
		ge "$batches" $(((pages + 511) / 512))
else
	skip "perf or migratepages not installed"
	skip "perf or migratepages not installed"
fi

# 8-10: perf record of mm_migrate_batch, 1 -> 0: the pages fields add up.
if have perf && have migratepages; then
	before=$(vmstat pgmigrate_success)
	perf record -q -e migrate:mm_migrate_batch -a -o "$tmp/perf.data" -- \
		migratepages "$pid" 1 0 >/dev/null 2>&1
	moved=$(($(vmstat pgmigrate_success) - before))
	perf script -i "$tmp/perf.data" >"$tmp/script" 2>/dev/null
	sum=$(field_sum "$tmp/script" pages)
	nb=$(grep -c mm_migrate_batch "$tmp/script")
	echo "# perf record: $nb batches, pages=$sum, moved=$moved"
	check "perf record: batch pages cover what moved ($sum, $moved)" \
		within "$sum" "$pages" $((2 * moved))
	check "perf script: every batch has mode, reason and stage fields" \
		batches_complete "$tmp/script"
	check "back on N0 after migratepages 1 0" ge "$(maps_on 0)" "$pages"
else
	skip "perf or migratepages not installed"
	skip "perf or migratepages not installed"
	skip "perf or migratepages not installed"
fi

# 11-12: trace-cmd record/report of the same tracepoint, 0 -> 1.
if have trace-cmd && have migratepages; then
	(cd "$tmp" && trace-cmd record -e migrate:mm_migrate_batch \
		-o "$tmp/trace.dat" migratepages "$pid" 0 1 >/dev/null 2>&1)
	trace-cmd report -i "$tmp/trace.dat" 2>/dev/null >"$tmp/report"
	sum=$(field_sum "$tmp/report" pages)
	check "trace-cmd report: batch pages add up ($sum >= $pages)" ge "$sum" "$pages"
	check "trace-cmd: the pages are on N1" ge "$(maps_on 1)" "$pages"
else
	skip "trace-cmd or migratepages not installed"
	skip "trace-cmd or migratepages not installed"
fi

# 13-14: the rst's tracefs example, as written (node 1 -> 0 or 0 -> 1).
from=0 to=1
[ "$(maps_on 1)" -ge "$pages" ] && from=1 to=0
T=/sys/kernel/tracing
if [ -d "$T/events/migrate/mm_migrate_batch" ] && have migratepages; then
	echo > "$T/trace"
	(
		cd "$T" &&
		echo 1 > events/migrate/mm_migrate_batch/enable &&
		echo 1 > events/migrate/mm_migration_entry_wait/enable &&
		migratepages "$pid" $from $to &&
		cat trace
	) >"$tmp/example" 2>&1
	echo 0 > "$T/events/migrate/mm_migrate_batch/enable"
	echo 0 > "$T/events/migrate/mm_migration_entry_wait/enable"
	check "rst example (tracefs): mm_migrate_batch lines in trace" \
		grep -q 'mm_migrate_batch: mode=' "$tmp/example"
else
	skip "no migrate:mm_migrate_batch in tracefs, or migratepages missing"
fi
if have perf && have migratepages; then
	t=$from from=$to to=$t
	# The rst's command, its events off until perf's control fifo says
	# (the ack) that they count; migrate, then end its workload (a read
	# of one line from a fifo: perf stat does not stop on SIGINT while
	# its workload runs).  No sleep guesses when perf is ready: a slow
	# guest only waits longer.
	mkfifo "$tmp/ctl" "$tmp/ack" "$tmp/done"
	exec 7<>"$tmp/done" 8<>"$tmp/ctl" 9<>"$tmp/ack"
	perf stat -x, -o "$tmp/stat2" -D -1 --control "fifo:$tmp/ctl,$tmp/ack" \
		-e migrate:mm_migrate_batch,migrate:mm_migration_entry_wait -a \
		head -n 1 "$tmp/done" &
	spid=$!
	echo enable >&8
	ack=
	read -r -t 60 ack <&9 || true
	before=$(vmstat pgmigrate_success)
	[ "$ack" = ack ] && migratepages "$pid" $from $to
	moved=$(($(vmstat pgmigrate_success) - before))
	echo done >&7
	wait $spid
	exec 7>&- 8>&- 9>&-
	b=$(awk -F, '$3 == "migrate:mm_migrate_batch" { print $1 + 0 }' "$tmp/stat2")
	if [ "$ack" != ack ]; then
		not_ok "rst example (perf stat -a sleep): perf did not ack \"enable\" in 60 s"
	else
		check "rst example (perf stat -a sleep): mm_migrate_batch counted ($b, $moved moved)" \
			all_ge "$moved" "$pages" "$b" $(((moved + 511) / 512))
	fi
else
	skip "perf or migratepages not installed"
fi

echo "# Totals: pass:$((n - fails - skips)) fail:$fails xfail:0 xpass:0 skip:$skips error:0"
[ $fails = 0 ]
