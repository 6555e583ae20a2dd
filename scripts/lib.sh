# SPDX-License-Identifier: GPL-2.0
# Shared functions for the branch tooling (tree, build, vm, test, demo).
# Sourced, never run.  Callers have already done `set -euo pipefail`.

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Everything generated lives outside the clone so that fresh clones build
# incrementally.  Override with NUMA_MM_CACHE=/some/dir.
CACHE=${NUMA_MM_CACHE:-$HOME/.cache/numa-mm}

# Two bases.  7.3 is the primary: its overlay is the repository root.
# 6.12 is the long-term-stable backport: its overlay is the root with
# lts/6.12/ laid after it, a file there taking the place of the root's
# file for the same upstream path.  Each base's home holds its BASE pin,
# base.lock, series/ and results/.  A script's first option `--base B`,
# or NUMA_MM_BASE=B, picks the base; children inherit it.
BASES=(7.3 6.12)
DEFAULT_BASE=7.3
TEST_BASES=(7.3 6.12)	# what scripts/test tests without --base

# select_base ID: read the base's pin and set the paths that follow it.
select_base() {
	case "$1" in
	7.3) BASE_HOME=. ;;
	6.12) BASE_HOME=lts/6.12 ;;
	*) die "unknown base '$1' (bases: ${BASES[*]})" ;;
	esac
	# shellcheck source=../BASE
	. "$REPO/$BASE_HOME/BASE"
	[ "${BASE_ID:-}" = "$1" ] || die "$BASE_HOME/BASE says BASE_ID=$BASE_ID, not $1"
	# 6.12's cache stays at the top of the cache directory, where it was
	# before there were two bases (its builds' recorded paths stay valid);
	# every other base has a directory of its own.  Shared by all: ccache,
	# apt/, debs/, arm64-busybox/, vm-logs/.
	BCACHE=$CACHE
	[ "$BASE_ID" = 6.12 ] || BCACHE=$CACHE/$BASE_ID
	BASE_DIR=$BCACHE/base/$BASE_TOPDIR	# pristine unpacked base, never modified
	TREE=$BCACHE/tree			# base + overlay, what we build
	BUILD=$BCACHE/build			# O= directory of the default build
	BUILD_DEBUG=$BCACHE/build-debug		# O= directory of the --debug (KASAN) build
	BUILD_BENCH=$BCACHE/build-bench		# O= directory of the --bench (no DEBUG_VM, lockdep) build
	BUILD_ARM64=$BCACHE/build-arm64		# O= directory of the arm64 guest's kernel
	LOCK=$REPO/$BASE_HOME/base.lock
	SERIES_DIR=$REPO/$BASE_HOME/series
	RESULTS=$REPO/$BASE_HOME/results
	export NUMA_MM_BASE=$BASE_ID
}

JOBS=${JOBS:-$(nproc)}

# Paths in the repository that are branch tooling, not kernel content.
TOOLING_RE='^(scripts/|kunit/|series/|\.ci/|README\.md$|BASE$|base\.lock$|\.gitignore$|results/|lts/[^/]+/(BASE|base\.lock|README\.md)$|lts/[^/]+/(series|results)/)'

_t0=$(date +%s)
step() { printf '==> [%4ss] %s\n' "$(( $(date +%s) - _t0 ))" "$*" >&2; }
info() { printf '    %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# cpu_ticks: sets CPU_TICKS to the user and system time, in clock ticks,
# of this shell's children that have ended (stat(5) cutime and cstime).
# A child counts from when the shell reaps it, which bash does as soon as
# it exits, whatever the shell is doing then: a difference of two calls
# is a command's time only if no other child ended in between (cpu_of).
# Reads /proc without a fork, which a $(...) would be; empty without /proc.
# Exported, with CLK_HZ, for the `bash -c` bodies of scripts/test.
CLK_HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)
cpu_ticks() {
	local stat st
	{ read -r stat <"/proc/$BASHPID/stat"; } 2>/dev/null || { CPU_TICKS=; return 0; }
	IFS=' ' read -ra st <<<"${stat##*) }"	# st[0] is field 3, after "pid (comm)"
	CPU_TICKS=$(( st[13] + st[14] ))
}
export CLK_HZ
export -f cpu_ticks
# cpu_secs T0: sets CPU_SECS to the CPU seconds of the children ended
# since cpu_ticks read T0, or to ? without /proc.
cpu_secs() {
	cpu_ticks
	CPU_SECS='?'
	[ -z "$1" ] || [ -z "$CPU_TICKS" ] || CPU_SECS=$(( (CPU_TICKS - $1) / CLK_HZ ))
}
export -f cpu_secs
# cpu_of FILE CMD...: CMD in a subshell, whose only children are CMD's;
# writes the CPU seconds they took to FILE, returns CMD's status.
cpu_of() {
	local file=$1
	shift
	(
		cpu_ticks
		t0=$CPU_TICKS rc=0
		"$@" || rc=$?
		cpu_secs "$t0"
		{ echo "$CPU_SECS" >"$file"; } 2>/dev/null || true
		exit $rc
	)
}

# own_session CMD... &: CMD in a session and process group of its own,
# whose ID is $! (`kill -- -$!` stops it whole), as `setsid -w CMD &`
# does, at this session's CPU weight.  With sched_autogroup_enabled a new
# session is a new autogroup, which competes with every other as an equal
# whatever the policy or nice of its tasks: the new one gets this one's
# autogroup nice, so that a job of scripts/test's idle chain does not
# escape it.  Only in the background: it execs.
own_session() {
	local nice
	nice=$(sed -n 's/.* nice \(-\{0,1\}[0-9]*\)$/\1/p' "/proc/$BASHPID/autogroup" 2>/dev/null || true)
	exec setsid -w bash -c '[ -z "$1" ] || echo "$1" >"/proc/$$/autogroup" 2>/dev/null || true
		shift; exec "$@"' own_session "$nice" "$@"
}

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

# with_apt_lock CMD...: CMD holding $CACHE/.apt.lock.  scripts/test builds
# one base in the background while it tests another, and apt-get gives
# up at once on dpkg's lock instead of waiting for it: every apt change
# of ours goes through this lock.
with_apt_lock() {
	mkdir -p "$CACHE"
	( flock 8 && "$@" ) 8>"$CACHE/.apt.lock"
}

# missing_pkgs PKG...: those not installed, one a line.
missing_pkgs() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			printf '%s\n' "$p"
	done
}

# need_pkgs PKG... : apt-get install whatever is missing.
need_pkgs() {
	[ -n "$(missing_pkgs "$@")" ] || return 0
	with_apt_lock install_pkgs "$@"
}

# install_pkgs PKG...: need_pkgs under the apt lock (what is missing is
# looked up again: a job beside this one may have installed it meanwhile).
install_pkgs() {
	local missing
	mapfile -t missing < <(missing_pkgs "$@")
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
	with_apt_lock add_arm64_arch
}
add_arm64_arch() {
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

# tcg_path: a directory to put first on kunit.py's PATH, where
# qemu-system-x86_64 and qemu-system-aarch64 are scripts/qemu-tcg, which
# keeps qemu on TCG whatever accelerators kunit.py asks for.
tcg_path() {
	local d=$CACHE/tcg-bin a
	mkdir -p "$d"
	for a in x86_64 aarch64; do
		ln -sfn "$REPO/scripts/qemu-tcg" "$d/qemu-system-$a"
	done
	printf '%s\n' "$d"
}

# kunit_frag FILE DIR: the fragment to give kunit.py for the config
# fragment FILE on the selected base.  FILE itself, unless the base drops
# options: kunit/drop-BASE lists those it lacks or does not need; then a
# copy of FILE without them, written to DIR.
kunit_frag() {
	local f=$1 dir=$2 drop
	drop=$(sed -n 's/^\(CONFIG_[A-Za-z0-9_]*\).*/\1/p' "$REPO/kunit/drop-$BASE_ID" 2>/dev/null |
		paste -sd'|')
	if [ -z "$drop" ]; then
		printf '%s\n' "$f"
		return 0
	fi
	mkdir -p "$dir"
	grep -vE "^($drop)=" "$f" >"$dir/$(basename "$f").$BASE_ID" || true
	printf '%s\n' "$dir/$(basename "$f").$BASE_ID"
}

# overlay_files: the repository paths laid on the selected base, in the
# order of their upstream paths.  The root's files, then the base's lts/
# files, which win over the root's for the same upstream path.
overlay_files() {
	local f
	git -C "$REPO" ls-files --cached --others --exclude-standard |
		grep -Ev "$TOOLING_RE" | while read -r f; do
			[ -f "$REPO/$f" ] || continue
			case "$f" in
			lts/*)
				[ "${f#"$BASE_HOME"/}" != "$f" ] || continue ;;
			esac
			printf '%s\t%s\t%s\n' "${f#lts/*/}" "$(upstream_of "$f")" "$f"
		done | LC_ALL=C sort -u | awk -F'\t' '
			{ if (!($2 in src) || $3 ~ /^lts\//) src[$2] = $3
			  if (!($2 in seen)) { seen[$2] = 1; order[n++] = $2 } }
			END { for (i = 0; i < n; i++) print src[order[i]] }'
}

# overlay_rel: overlay_files relative to their base home (the upstream
# path, with .patch kept).
overlay_rel() {
	overlay_files | sed 's,^lts/[^/]*/,,'
}

# upstream_of FILE: the base path an overlay file lands on.
upstream_of() {
	local f=${1#lts/*/}
	case "$f" in
	*.patch) printf '%s\n' "${f%.patch}" ;;
	*) printf '%s\n' "$f" ;;
	esac
}

# The base: `--base B` as the caller's first option (taken off its
# arguments), else NUMA_MM_BASE, else the default.
if [ "${1:-}" = --base ]; then
	[ $# -ge 2 ] || die "--base wants one of: ${BASES[*]}"
	select_base "$2"
	shift 2
else
	select_base "${NUMA_MM_BASE:-$DEFAULT_BASE}"
fi
