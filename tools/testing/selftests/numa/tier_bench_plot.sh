#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# tier_bench_plot.sh CSV CDF_CSV PNG
#
# Renders `tier_bench -o CSV -l CDF_CSV` as one PNG with two panels: on the
# left the op latency CDF of each configuration (log x), on the right the
# /proc/vmstat deltas of fenced and private as ratios to plain (log y, a
# dashed line at 1).  A ratio is (x + 1) / (plain + 1), so that counters
# that were 0 in one configuration still show; missing counters are left
# out.  Needs gnuplot.
set -eu

[ $# -eq 3 ] || { echo "usage: $0 CSV CDF_CSV PNG" >&2; exit 2; }
csv=$1 cdf=$2 png=$3
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found" >&2; exit 2; }
for f in "$csv" "$cdf"; do
	[ -s "$f" ] || { echo "$0: $f is empty" >&2; exit 2; }
done
if ! head -1 "$csv" | grep -qx 'config,metric,value' ||
	! head -1 "$cdf" | grep -qx 'config,latency_ns,fraction'; then
	echo "$0: $csv or $cdf is not a tier_bench CSV" >&2
	exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The vmstat metrics, in tier_bench's order.
vm="pgfault pgactivate pgreuse pgrefill pgdemote_kswapd pgdemote_direct
allocstall pgpromote_success pgpromote_candidate pgmigrate_fail
numa_hint_faults numa_pages_migrated pswpin pswpout pgfence_cow
pgdemote_fence_skip"

# metric,fenced/plain,private/plain ("?" where a value is missing)
awk -F, -v vm="$vm" '
NR > 1 { v[$1 "," $2] = $3 }
function r(c, m) {
	if (!(("plain," m) in v) || !((c "," m) in v))
		return "?"
	return sprintf("%.4g", (v[c "," m] + 1) / (v["plain," m] + 1))
}
END {
	n = split(vm, names, /[ \n]+/)
	for (i = 1; i <= n; i++)
		if (("plain," names[i]) in v)
			print names[i] "," r("fenced", names[i]) "," \
			      r("private", names[i])
}' "$csv" >"$tmp/ratios.csv"
[ -s "$tmp/ratios.csv" ] || echo "$0: no plain vmstat values in $csv" >&2

cfgs=$(awk -F, 'NR > 1 && !seen[$1]++ { printf "%s ", $1 }' "$cdf")
# a y range around 1 with room on both sides: bars start at its bottom
yr=$(awk -F, '
BEGIN { lo = 0.5; hi = 2 }
{ for (i = 2; i <= 3; i++) if ($i != "?") {
	if ($i + 0 < lo) lo = $i + 0
	if ($i + 0 > hi) hi = $i + 0
} }
END { printf "[%g:%g] %d", lo / 2, hi * 2, (hi / lo > 1000 ? 10 : 2) }' \
	"$tmp/ratios.csv")
ybase=${yr#* } yr=${yr% *}

gnuplot <<EOT
set terminal pngcairo noenhanced size 1500,650
set output '$png'
set datafile separator ','
set datafile missing '?'
set multiplot layout 1,2 title 'tier_bench: plain, fenced, private ($(basename "$csv"))'
set grid
set key bottom right
set logscale x
set format x '%.0s%c'
set xlabel 'op latency (ns)'
set ylabel 'fraction of ops'
set yrange [0:1]
plot for [c in '$cfgs'] '$cdf' every ::1 \
	using (strcol(1) eq c ? \$2 : NaN):3 with lines lw 2 title c
unset logscale x
set format x '%g'
set xlabel ''
set key top left
set logscale y $ybase
set yrange $yr
set format y '%g'
set ylabel 'ratio to plain, (x + 1) / (plain + 1)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -40 left
set rmargin 16
set grid noxtics
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 2 lc rgb 'black'
plot '$tmp/ratios.csv' using 2:xtic(1) title 'fenced/plain', \
	'' using 3 title 'private/plain'
unset multiplot
EOT
echo "wrote $png"
