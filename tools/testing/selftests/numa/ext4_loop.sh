#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the tests that need an ext4 filesystem: ext4_setup mounts
# one from a loop device at $EXT4_DIR, using $EXT4_IMAGE (or
# /images/ext4.img, as packed by the branch's VM harness) when present,
# else a 48 MiB image made with mkfs.ext4 in $TMPDIR.  It SKIPs the test
# (exit 4) when it cannot.  ext4_teardown undoes it.

ksft_skip=4
ext4_tmp=${TMPDIR:-/tmp}
ext4_img=${EXT4_IMAGE:-/images/ext4.img}
ext4_made=""
ext4_loop=""
EXT4_DIR=""

ext4_skip() {
	echo "1..0 # SKIP $*"
	[ -n "$EXT4_DIR" ] && rmdir "$EXT4_DIR" 2>/dev/null
	exit $ksft_skip
}

ext4_setup() {
	[ "$(id -u)" = 0 ] || ext4_skip "needs root for losetup and mount"
	grep -qw ext4 /proc/filesystems || ext4_skip "kernel has no ext4"
	EXT4_DIR=$(mktemp -d "$ext4_tmp/ext4_loop.XXXXXX") || exit 1
	if [ ! -f "$ext4_img" ]; then
		command -v mkfs.ext4 >/dev/null || ext4_skip "no $ext4_img and no mkfs.ext4"
		ext4_img=$ext4_tmp/ext4_loop.img
		ext4_made=$ext4_img
		dd if=/dev/zero of="$ext4_img" bs=1M count=48 2>/dev/null &&
			mkfs.ext4 -q -F "$ext4_img" || ext4_skip "mkfs.ext4 failed"
	fi
	ext4_loop=$(losetup -f 2>/dev/null) || ext4_skip "no free loop device"
	losetup "$ext4_loop" "$ext4_img" || ext4_skip "losetup failed"
	if ! mount -t ext4 "$ext4_loop" "$EXT4_DIR"; then
		losetup -d "$ext4_loop"
		ext4_skip "cannot mount ext4 from $ext4_img"
	fi
}

ext4_teardown() {
	umount "$EXT4_DIR"
	losetup -d "$ext4_loop"
	rmdir "$EXT4_DIR"
	[ -n "$ext4_made" ] && rm -f "$ext4_made"
}
