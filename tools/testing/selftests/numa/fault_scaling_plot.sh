#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# fault_scaling_plot.sh CSV PNG
#
# Renders a `fault_scaling -o CSV` file: total ops/s (processes or threads
# column) and efficiency against the number of workers, with a dashed line
# at every node boundary (multiples of the node_width column).  Needs gnuplot.
set -eu

[ $# -eq 2 ] || { echo "usage: $0 CSV PNG" >&2; exit 2; }
csv=$1 png=$2
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found" >&2; exit 2; }
[ -s "$csv" ] || { echo "$0: $csv is empty" >&2; exit 2; }

# Columns by name, so extra columns can be added later.
col() { head -1 "$csv" | tr ',' '\n' | grep -nx "$1" | cut -d: -f1; }
tasks=$(col tasks) procs=$(col processes) thr=$(col threads)
eff=$(col efficiency) width=$(col node_width)
[ -n "$tasks" ] && [ -n "$procs" ] && [ -n "$eff" ] && [ -n "$width" ] ||
	{ echo "$0: $csv lacks the fault_scaling columns" >&2; exit 2; }

w=$(awk -F, -v c="$width" 'NR == 2 { print $c }' "$csv")
maxt=$(awk -F, -v c="$tasks" 'NR > 1 && $c > m { m = $c } END { print m }' "$csv")
bounds=""
i=$w
while [ "$w" -gt 0 ] && [ "$i" -lt "$maxt" ]; do
	bounds="$bounds set arrow from $i.5, graph 0 to $i.5, graph 1 nohead dt 2 lc rgb 'gray';"
	i=$((i + w))
done

# processes column, or threads when the sweep ran threads
ops="(\$$procs > 0 ? \$$procs : \$$thr)"

gnuplot <<EOT
set terminal pngcairo size 900,700
set output '$png'
set datafile separator ','
set key top left
set multiplot layout 2,1 title 'fault\_scaling ($(basename "$csv"))'
set grid
set ylabel 'ops/s (pages touched)'
set yrange [0:*]
set format y '%.0s%c'
$bounds
plot '$csv' every ::1 using $tasks:$ops with linespoints pt 7 title 'total'
set ylabel 'efficiency T(N)/(N T(1))'
set xlabel 'workers (dashed: node boundaries)'
set format y '%.2f'
set yrange [0:*]
plot '$csv' every ::1 using $tasks:$eff with linespoints pt 7 title 'efficiency'
unset multiplot
EOT
echo "wrote $png"
