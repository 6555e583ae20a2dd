#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs rocm_race's writable_sharer test with its file on ext4 in a loop
# device (see ext4_loop.sh), where the writer's shared mapping goes
# through page_mkwrite and writeback.  The other tests need no ext4.
# Needs root; SKIPs when it cannot set up ext4.

dir=$(dirname "$0")
. "$dir/ext4_loop.sh"
ext4_setup
ROCM_RACE_DIR="$EXT4_DIR" "$dir/rocm_race" -t writable_sharer "$@"
rc=$?
ext4_teardown
exit $rc
