#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs rocm's ext4 classes (read-only mappings of clean ext4 page cache,
# and the dirty and written ones that must fall back) on an ext4
# filesystem in a loop device (see ext4_loop.sh).  Needs root; SKIPs when
# it cannot set up ext4.

dir=$(dirname "$0")
. "$dir/ext4_loop.sh"
# rocm restores the writeback interval it changes at exit, but not when a
# signal (the runner's timeout) kills it: then this does.
wb_file=/proc/sys/vm/dirty_writeback_centisecs
wb=$(cat "$wb_file" 2>/dev/null)
trap '[ -z "$wb" ] || { echo "$wb" > "$wb_file"; } 2>/dev/null' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
ext4_setup
"$dir/rocm" --ext4-dir="$EXT4_DIR" --ext4-only "$@"
rc=$?
ext4_teardown
exit $rc
