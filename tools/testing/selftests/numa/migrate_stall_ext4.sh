#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs migrate_stall's file_ro_ext4 variant on an ext4 filesystem in a
# loop device.  Uses $EXT4_IMAGE (or /images/ext4.img, as packed by the
# branch's VM harness) when present, else makes a 48 MiB image with
# mkfs.ext4 in $TMPDIR.  Needs root; SKIPs when it cannot set up ext4.

ksft_skip=4
dir=$(dirname "$0")
tmp=${TMPDIR:-/tmp}
img=${EXT4_IMAGE:-/images/ext4.img}
mnt=$(mktemp -d "$tmp/migrate_stall_ext4.XXXXXX") || exit 1
made=""

skip() {
	echo "1..0 # SKIP $*"
	rmdir "$mnt" 2>/dev/null
	exit $ksft_skip
}

[ "$(id -u)" = 0 ] || skip "needs root for losetup and mount"
grep -qw ext4 /proc/filesystems || skip "kernel has no ext4"
if [ ! -f "$img" ]; then
	command -v mkfs.ext4 >/dev/null || skip "no $img and no mkfs.ext4"
	img=$tmp/migrate_stall_ext4.img
	made=$img
	dd if=/dev/zero of="$img" bs=1M count=48 2>/dev/null &&
		mkfs.ext4 -q -F "$img" || skip "mkfs.ext4 failed"
fi
loop=$(losetup -f 2>/dev/null) || skip "no free loop device"
losetup "$loop" "$img" || skip "losetup failed"
if ! mount -t ext4 "$loop" "$mnt"; then
	losetup -d "$loop"
	skip "cannot mount ext4 from $img"
fi

"$dir/migrate_stall" -v file_ro_ext4 --ext4-dir="$mnt" "$@"
rc=$?

umount "$mnt"
losetup -d "$loop"
rmdir "$mnt"
[ -n "$made" ] && rm -f "$made"
exit $rc
