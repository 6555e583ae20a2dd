#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# migrate_stages_plot.sh LOG [HIST_CSV] OUTDIR
#
# Renders what tools/testing/selftests/numa/migrate_stall measured:
#   OUTDIR/migrate_stages.png  stacked bars: ns per 4 KiB copied spent in
#                              each stage (from the "stages <variant>:" lines of
#                              LOG, i.e. /sys/kernel/debug/mm/migrate_stages
#                              dumps), one bar per variant
#   OUTDIR/migrate_stalls.png  worker stall histograms, baseline vs during
#                              migration, per variant (from HIST_CSV, the
#                              `migrate_stall -o` file), when given
#   OUTDIR/migrate_stages.dat  the table behind the first plot
# Needs gnuplot and awk.
set -eu

[ $# -eq 2 ] || [ $# -eq 3 ] || {
	echo "usage: $0 LOG [HIST_CSV] OUTDIR" >&2
	exit 2
}
log=$1
hist=""
[ $# -eq 3 ] && hist=$2
eval "out=\${$#}"
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found" >&2; exit 2; }
mkdir -p "$out"
dat=$out/migrate_stages.dat

# "stages V: NAME COUNT MEAN ..." -> per variant: ns per 4 KiB of each stage
awk '
	$2 == "stages" {
		v = $3; sub(/:$/, "", v)
		if (!(v in seen)) { seen[v] = 1; order[++nv] = v }
		if ($4 == "bytes_copied") pages[v] = $5 / 4096
		if ($4 == "folios") folios[v] = $5
		if ($4 ~ /^(alloc|lock|wb_wait|unmap|flush|copy|mapping|remap)$/) {
			tot[v, $4] = $5 * $6
			cnt[v, $4] = $5
		}
	}
	END {
		print "variant alloc lock wb_wait unmap flush copy mapping remap"
		for (i = 1; i <= nv; i++) {
			v = order[i]; f = pages[v] > 0 ? pages[v] : 1
			# per-folio stages are sampled (pages counts sampled copies);
			# flush is timed for every batch: scale by all pages moved
			all = cnt[v, "copy"] > 0 ? f * folios[v] / cnt[v, "copy"] : f
			printf "%s", v
			n = split("alloc lock wb_wait unmap flush copy mapping remap", s, " ")
			for (j = 1; j <= n; j++)
				printf " %.0f", tot[v, s[j]] / (s[j] == "flush" ? all : f)
			printf "\n"
		}
	}' "$log" >"$dat"
[ "$(wc -l <"$dat")" -gt 1 ] || {
	echo "$0: no stage dumps in $log (kernel without CONFIG_MIGRATE_STAGES?)" >&2
	exit 2
}

gnuplot <<EOT
set terminal pngcairo size 1000,600 noenhanced
set output '$out/migrate_stages.png'
set title 'migration cost by stage (ns per 4 KiB moved)'
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.7
set key outside right
set ylabel 'ns per 4 KiB'
set xtics rotate by -30
set grid ytics
plot for [c=2:9] '$dat' using c:xtic(1) title columnheader(c)
EOT
echo "wrote $out/migrate_stages.png"

[ -n "$hist" ] || exit 0
[ -s "$hist" ] || { echo "$0: $hist is empty" >&2; exit 2; }
variants=$(awk -F, 'NR > 1 && !s[$1]++ { print $1 }' "$hist")
n=$(echo "$variants" | wc -l)
rows=$(( (n + 1) / 2 ))
{
	echo "set terminal pngcairo size 1100,$((rows * 300)) noenhanced"
	echo "set output '$out/migrate_stalls.png'"
	echo "set datafile separator ','"
	echo "set logscale x 2"
	echo "set format x '%.0s%c'"
	echo "set logscale y 10"
	echo "set xlabel 'gap between progress stamps (ns, log2 buckets)'"
	echo "set ylabel 'count'"
	echo "set multiplot layout $rows,2 title 'worker stalls: baseline vs migrating'"
	for v in $variants; do
		echo "set title '$v'"
		b="(strcol(1) eq '$v' && strcol(2) eq 'baseline' ? \$3 + 1 : 1/0):4"
		m="(strcol(1) eq '$v' && strcol(2) eq 'migrating' ? \$3 + 1 : 1/0):4"
		echo "plot '$hist' using $b with linespoints title 'baseline', \\"
		echo "     '$hist' using $m with linespoints title 'migrating'"
	done
	echo "unset multiplot"
} | gnuplot
echo "wrote $out/migrate_stalls.png"
