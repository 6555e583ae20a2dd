#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs migrate_stall's file_ro_ext4 variant on an ext4 filesystem in a
# loop device (see ext4_loop.sh).  Needs root; SKIPs when it cannot set
# up ext4.

dir=$(dirname "$0")
. "$dir/ext4_loop.sh"
ext4_setup
"$dir/migrate_stall" -v file_ro_ext4 --ext4-dir="$EXT4_DIR" "$@"
rc=$?
ext4_teardown
exit $rc
