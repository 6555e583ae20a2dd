#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The field's NUMA tools with private nodes present.  With cpusets
# libnuma takes "all" and the nodes it accepts from Mems_allowed, which
# never holds a private node; numactl -a (--all), and kernels without
# cpusets, take every node whose meminfo shows memory, private ones
# included.  Both ways --interleave=all, --membind=all, the normal nodes
# alone, migratepages and numastat -m must work as on a machine without
# private nodes; naming only a private node without USER_NUMA must fail,
# naming one with it must work.  Needs the node_private_test provider
# and two carved nodes ("scripts/vm --private-nodes"); each missing tool
# is a SKIP naming it, or a failure with NUMA_PRIVATE_TOOLS_REQUIRED=1
# (the guest scripts/test boots has them all).

NPT=/sys/kernel/debug/node_private_test
n=0 fails=0 skips=0 pid= claimed=

ok() { n=$((n + 1)); echo "ok $n $*"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n $*"; }
skip() {
	if [ "${NUMA_PRIVATE_TOOLS_REQUIRED:-0}" = 1 ]; then not_ok "$*"
	else n=$((n + 1)); skips=$((skips + 1)); echo "ok $n # SKIP $*"; fi
}
have() { command -v "$1" >/dev/null 2>&1; }
runs() {	# runs NAME COMMAND...: the command must succeed
	name=$1; shift
	if out=$("$@" 2>&1); then ok "$name"; else
		echo "# $*: $out"; not_ok "$name"; fi
}
fails() {	# fails NAME COMMAND...: the command must fail
	name=$1; shift
	if "$@" >/dev/null 2>&1; then
		echo "# $* succeeded"; not_ok "$name"; else ok "$name"; fi
}
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	for nid in $claimed; do echo "$nid" >"$NPT/release"; done
}
trap cleanup EXIT

skip_all() {	# skip_all REASON: nothing can run here
	if [ "${NUMA_PRIVATE_TOOLS_REQUIRED:-0}" = 1 ]; then
		echo "Bail out! $*"; exit 1; fi
	echo "1..0 # SKIP $*"; exit 4
}

echo "TAP version 13"
[ "$(id -u)" = 0 ] || skip_all "needs root"
[ -w "$NPT/claim" ] || skip_all "no node_private_test provider"
set -- $(awk '$4 == "free" { print $1 }' "$NPT/ranges" | sort -un)
[ $# -ge 2 ] ||
	skip_all "two free carved nodes needed (scripts/vm --private-nodes)"
plain=$1 user=$2	# no USER_NUMA / USER_NUMA
echo "1..14"
echo "$plain 0x5 movable" >"$NPT/claim" && claimed="$plain" &&
echo "$user 0x7 movable" >"$NPT/claim" && claimed="$claimed $user" || {
	echo "Bail out! cannot claim nodes $plain and $user"; exit 1; }
echo "# node $plain: RECLAIM|HOTUNPLUG, node $user: also USER_NUMA"

if have numactl; then
	runs numactl_hardware numactl --hardware
	runs interleave_all numactl --interleave=all true
	runs membind_all numactl --membind=all true
else
	for t in numactl_hardware interleave_all membind_all; do
		skip "$t: no numactl"
	done
fi

nm="numactl -a"	# every node with memory, private ones too
tests="interleave_every membind_every membind_normal preferred_normal
membind_plain_alone preferred_plain_alone membind_user_alone
membind_normal_and_plain"
if have numactl && numactl -a true 2>/dev/null; then
	runs interleave_every $nm --interleave=all true
	runs membind_every $nm --membind=all true
	runs membind_normal $nm --membind=0,1 true
	runs preferred_normal $nm --preferred=0 true
	fails membind_plain_alone $nm --membind="$plain" true
	fails preferred_plain_alone $nm --preferred="$plain" true
	runs membind_user_alone $nm --membind="$user" true
	runs membind_normal_and_plain $nm --membind="0,$plain" true
else
	for t in $tests; do skip "$t: no numactl with -a"; done
fi

if have migratepages; then
	sleep 600 &
	pid=$!
	runs migratepages_all migratepages "$pid" all 1
	runs migratepages_normal migratepages "$pid" 1 0
else
	skip "migratepages_all: no migratepages"
	skip "migratepages_normal: no migratepages"
fi

if have numastat; then
	runs numastat_m numastat -m
else
	skip "numastat_m: no numastat"
fi

echo "# Totals: pass:$((n - fails - skips)) fail:$fails xfail:0 xpass:0 skip:$skips error:0"
[ "$fails" = 0 ] || exit 1
[ "$skips" = 0 ] || exit 4
exit 0
