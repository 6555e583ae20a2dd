#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# migrate_flush_plot.sh LOG OUTDIR
#
# Renders the TLB shootdown rounds per migration path that the numa
# selftests migrate_flush and migrate_flush_paths count (LOG: their
# console output, both in one boot): for each path, the remote flush
# rounds with vm.migrate_defer_flush 0 (stock) and 1, and the batches.
#   OUTDIR/migrate_flush_rounds.csv  path,stock_rounds,stock_batches,
#                                    deferred_rounds,deferred_batches
#   OUTDIR/migrate_flush_rounds.png  rounds per path, stock vs deferred
#                                    (log scale)
# Needs gnuplot and awk.
set -eu

[ $# -eq 2 ] || {
	echo "usage: $0 LOG OUTDIR" >&2
	exit 2
}
log=$1 out=$2
csv=$out/migrate_flush_rounds.csv
png=$out/migrate_flush_rounds.png
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found" >&2; exit 2; }

# "#  RUN  mf.anon.rounds ..." names the path of the next
# "stock=R/B deferred=R/B (rounds/batches)" line.
tr -d '\r' <"$log" | awk '
/#  RUN / {
	for (i = 1; i <= NF; i++)
		if ($i == "RUN")
			name = $(i + 1)
	sub(/^(mf|fp|nb)\./, "", name)
	sub(/\.rounds$/, "", name)
}
/ stock=[0-9]+\/[0-9]+ deferred=[0-9]+\/[0-9]+ / {
	for (i = 1; i <= NF; i++) {
		if ($i ~ /^stock=/) { split(substr($i, 7), s, "/") }
		if ($i ~ /^deferred=/) { split(substr($i, 10), d, "/") }
	}
	print name "," s[1] "," s[2] "," d[1] "," d[2]
}' >"$csv"
[ -s "$csv" ] || { echo "$0: no flush counts in $log" >&2; exit 1; }

gnuplot <<EOF
set terminal pngcairo size 900,480 noenhanced
set output "$png"
set title "Remote TLB flush rounds per migration path (x86 guest, counted)"
set datafile separator ","
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set yrange [0.5:*]
set ylabel "shootdown rounds (tlb:tlb_flush, remote)"
set xtics rotate by -30
set key top right
plot "$csv" using 2:xtic(1) title "vm.migrate_defer_flush=0 (stock)", \
     "" using 4 title "vm.migrate_defer_flush=1"
EOF
echo "$csv"
echo "$png"
