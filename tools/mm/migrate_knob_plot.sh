#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# migrate_knob_plot.sh LOG VARIANT OUTDIR
#
# Renders a `migrate_stall --bench --knob K` run (LOG, the guest console
# or the program's output): the mean ns per page of each stage with the
# knob off (stock) and on, from the "stages VARIANT load=idle knob=off|on:"
# lines, as clustered bars.
#   OUTDIR/migrate_knob_VARIANT.png  the plot
#   OUTDIR/migrate_knob_VARIANT.dat  the table behind it
# Needs gnuplot and awk.
set -eu

[ $# -eq 3 ] || {
	echo "usage: $0 LOG VARIANT OUTDIR" >&2
	exit 2
}
log=$1 variant=$2 out=$3
dat=$out/migrate_knob_$variant.dat
png=$out/migrate_knob_$variant.png
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found" >&2; exit 2; }

awk -v v="$variant" '
$0 ~ "stages " v " load=idle knob=(off|on):" {
	k = ($0 ~ /knob=off/) ? "off" : "on"
	n[k]++
	for (i = 1; i <= NF; i++)
		if (split($i, kv, "=") == 2 && kv[1] ~ /^(unmap|flush|copy|mapping|remap)$/) {
			val = kv[2]
			sub(/;$/, "", val)
			sum[k, kv[1]] += val
		}
}
END {
	if (!n["off"] || !n["on"])
		exit 1
	print "# stage off on (mean ns per 4 KiB page)"
	split("unmap flush copy mapping remap", st, " ")
	for (i = 1; i <= 5; i++)
		printf "%s %.0f %.0f\n", st[i], sum["off", st[i]] / n["off"],
		       sum["on", st[i]] / n["on"]
}' "$log" >"$dat" || { echo "$0: no off/on stage lines for $variant in $log" >&2; exit 1; }

gnuplot <<EOT
set terminal pngcairo size 800,500 noenhanced
set output '$png'
set title '$variant: stage time per page, knob off (stock) vs on'
set ylabel 'ns per 4 KiB page'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set key top right
set grid ytics
plot '$dat' using 2:xtic(1) title 'off (stock)', '' using 3 title 'on'
EOT
echo "wrote $png"
