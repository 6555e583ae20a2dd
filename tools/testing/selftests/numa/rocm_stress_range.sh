#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs rocm_stress with vm.migrate_range_unmap on, so that ROCM switches
# the pages it moves in runs (one rmap walk, a page table at a time; on
# arm64 their PTEs broken in batches under one PTE lock), and checks that
# runs did move pages.  Needs root; SKIPs without CONFIG_MIGRATE_RANGE.

dir=$(dirname "$0")
knob=/proc/sys/vm/migrate_range_unmap
stats=/sys/kernel/debug/migrate_range/stats

# The rocm_moved count of $stats.  Anything but a number fails, saying
# what was read: compared as "" it would make the check below pass.
rocm_moved() {
	n=$(tr ' ' '\n' <"$stats" | sed -n '/^rocm_moved$/{n;p;}')
	case $n in
	'' | *[!0-9]*)
		echo "# no rocm_moved count in $stats: read '$n'" >&2
		return 1
		;;
	esac
	echo "$n"
}

if ! old=$(cat "$knob" 2>/dev/null) || [ ! -r "$stats" ] ||
   ! echo 1 >"$knob" 2>/dev/null; then
	echo "# SKIP: no $knob or $stats (CONFIG_MIGRATE_RANGE, debugfs, root)"
	exit 4
fi
trap 'echo "$old" >"$knob"' EXIT
before=$(rocm_moved) || exit 1
"$dir/rocm_stress" "$@"
rc=$?
after=$(rocm_moved) || exit 1
echo "# pages ROCM moved in runs: $((after - before))"
if [ $rc = 0 ] && [ "$after" -le "$before" ]; then
	echo "# no ROCM run moved a page: the runs were not exercised"
	rc=1
fi
exit $rc
