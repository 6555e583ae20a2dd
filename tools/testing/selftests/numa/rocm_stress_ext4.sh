#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs rocm_stress on an ext4 filesystem in a loop device (see
# ext4_loop.sh), where a shared writable mapping goes through
# page_mkwrite.  Needs root; SKIPs when it cannot set up ext4.

dir=$(dirname "$0")
. "$dir/ext4_loop.sh"
ext4_setup
"$dir/rocm_stress" -d "$EXT4_DIR" "$@"
rc=$?
ext4_teardown
exit $rc
