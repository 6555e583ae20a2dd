# SPDX-License-Identifier: GPL-2.0
# Shared functions for the branch tooling (tree, build, vm, test, demo).
# Sourced, never run.  Callers have already done `set -euo pipefail`.

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../BASE
. "$REPO/BASE"

# Everything generated lives outside the clone so that fresh clones build
# incrementally.  Override with NUMA_MM_CACHE=/some/dir.
CACHE=${NUMA_MM_CACHE:-$HOME/.cache/numa-mm}
BASE_DIR=$CACHE/base/$BASE_TOPDIR	# pristine unpacked base, never modified
TREE=$CACHE/tree			# base + overlay, what we build
BUILD=$CACHE/build			# O= directory of the default build
BUILD_DEBUG=$CACHE/build-debug		# O= directory of the --debug (KASAN) build
BUILD_BENCH=$CACHE/build-bench		# O= directory of the --bench (no DEBUG_VM, lockdep) build
BUILD_ARM64=$CACHE/build-arm64		# O= directory of the arm64 guest's kernel
JOBS=${JOBS:-$(nproc)}

# Paths in the repository that are branch tooling, not kernel content.
TOOLING_RE='^(scripts/|kunit/|series/|\.ci/|README\.md$|BASE$|\.gitignore$|results/)'

_t0=$(date +%s)
step() { printf '==> [%4ss] %s\n' "$(( $(date +%s) - _t0 ))" "$*" >&2; }
info() { printf '    %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Run a command as root: directly when we are root, through sudo otherwise.
as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root to run: $* (run as root, or install sudo)"
	fi
}

# need_pkgs PKG... : apt-get install whatever is missing.
need_pkgs() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	step "installing packages: ${missing[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y \
		--no-install-recommends "${missing[@]}" >&2 ||
	{
		as_root apt-get update >&2 &&
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y \
			--no-install-recommends "${missing[@]}" >&2
	} || die "apt-get install ${missing[*]} failed; install them by hand and rerun"
}

# Debian's arm64 packages (busybox, libnuma for the cross-built selftests).
ensure_arm64_arch() {
	dpkg --print-foreign-architectures | grep -qx arm64 && return 0
	step "adding Debian's arm64 architecture (multiarch)"
	as_root dpkg --add-architecture arm64
	as_root apt-get update >&2 || die "apt-get update failed"
}

# Host packages every job may need.
HOST_PKGS=(build-essential bc bison flex libelf-dev libssl-dev cpio xz-utils
	   kmod rsync python3 ccache qemu-system-x86 busybox-static
	   libnuma-dev gnuplot-nox e2fsprogs)

# Make wrapper for the kernel in $TREE with output in $1.
kmake() {
	local out=$1; shift
	local cc=gcc
	command -v ccache >/dev/null 2>&1 && cc="ccache gcc"
	CCACHE_DIR=${CCACHE_DIR:-$CACHE/ccache} CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G} \
		make -C "$TREE" O="$out" ARCH=x86_64 CC="$cc" HOSTCC=gcc \
		-j"$JOBS" "$@"
}

# The list of overlay files in the repo (kernel content, relative paths).
overlay_files() {
	git -C "$REPO" ls-files --cached --others --exclude-standard |
		grep -Ev "$TOOLING_RE" | while read -r f; do
			[ -f "$REPO/$f" ] && printf '%s\n' "$f"
		done | sort -u
}

# upstream_of FILE: the base path an overlay file lands on.
upstream_of() {
	case "$1" in
	*.patch) printf '%s\n' "${1%.patch}" ;;
	*) printf '%s\n' "$1" ;;
	esac
}
