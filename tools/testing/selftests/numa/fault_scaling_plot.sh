#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# fault_scaling_plot.sh CSV PNG
#
# Renders a `fault_scaling -o CSV` file against the number of workers, in
# three panels with a dashed line at every node boundary (where the nodes
# column grows: k * node_width + 0.5 workers), labelled with the node the
# next worker starts:
#   total ops/s (processes or threads column) and the ideal, the linear
#   column (one worker's rate times the workers);
#   speedup T(N)/T(1), the control loop's own speedup C(N)/C(1) (what the
#   CPUs give, from the control column) and the ideal;
#   efficiency T(N)/(N T(1)) and speedup / control speedup, the share of
#   what the CPUs give that the faults got (1 is ideal for both).
# The control series are left out when the sweep ran with --no-control.
# Needs gnuplot and awk.
set -eu

[ $# -eq 2 ] || { echo "usage: $0 CSV PNG" >&2; exit 2; }
csv=$1 png=$2
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found" >&2; exit 2; }
[ -s "$csv" ] || { echo "$0: $csv is empty" >&2; exit 2; }

# Columns by name, so extra columns can be added later.
col() { head -1 "$csv" | tr -d '\r' | tr ',' '\n' | grep -nx "$1" | cut -d: -f1; }
tasks=$(col tasks) procs=$(col processes) thr=$(col threads) lin=$(col linear)
nodes=$(col nodes) width=$(col node_width) sp=$(col speedup) eff=$(col efficiency)
ctl=$(col control)
for c in "$tasks" "$procs" "$thr" "$lin" "$nodes" "$width" "$sp" "$eff"; do
	[ -n "$c" ] || { echo "$0: $csv lacks the fault_scaling columns" >&2; exit 2; }
done

# first row's tasks and control rate (0: no control loop), most workers
read -r t1 ctl1 maxt <<EOF
$(awk -F, -v t="$tasks" -v c="${ctl:-0}" '
NR == 2 { t1 = $t; c1 = c ? $c + 0 : 0 }
NR > 1 && $t > m { m = $t }
END { print t1 + 0, c1, m + 0 }' "$csv")
EOF
[ "$maxt" -gt 0 ] || { echo "$0: no rows in $csv" >&2; exit 2; }

# Node boundaries: where the nodes column grows from k to k + 1, the
# (k * node_width + 1)th worker is the first on node k + 1.
bounds=$(sort -t, -n -k"$tasks" "$csv" | awk -F, -v t="$tasks" -v n="$nodes" \
	-v w="$width" '
$t !~ /^[0-9]+$/ { next }
pn && $n > pn {
	for (k = pn; k < $n; k++) {
		x = $w > 0 ? k * $w + 0.5 : (pt + $t) / 2
		if (x <= pt || x >= $t)
			x = (pt + $t) / 2
		printf "set arrow from %g, graph 0 to %g, graph 1 nohead", x, x
		print " dt 2 lc rgb \"gray40\""
		printf "set label \"node %d\" at %g, graph 0.05", k + 1, x
		print " offset 0.3, 0 boxed front"
	}
}
{ pt = $t; pn = $n }')

# integer worker ticks, at most about 16 of them
step=1
while [ $((maxt / step)) -gt 16 ]; do
	step=$((step * 2))
done

# processes column, or threads when the sweep ran threads
ops="(\$$procs > 0 ? \$$procs : \$$thr)"
ideal="(\$$lin > 0 ? \$$lin : 1/0)"
if [ "$(awk -v c="$ctl1" 'BEGIN { print (c > 0) }')" = 1 ]; then
	cspeed="(\$$ctl > 0 ? \$$ctl / $ctl1 : 1/0)"
	ctl_sp=", '' every ::1 using $tasks:$cspeed with linespoints pt 5 lw 2 \\
	title 'control speedup C(N)/C(1)'"
	ctl_norm=", '' every ::1 using $tasks:(\$$sp / $cspeed) with linespoints pt 5 lw 2 \\
	title 'speedup / control speedup'"
else
	ctl_sp="" ctl_norm=""
fi

gnuplot <<EOT
set terminal pngcairo size 900,1050 noenhanced
set output '$png'
set datafile separator ','
set multiplot layout 3,1 title 'fault_scaling ($(basename "$csv"))'
set grid
set key top left opaque box
set lmargin 12
set rmargin 4
set style textbox opaque noborder
set xrange [0.5:$maxt + 0.5]
set xtics $step
unset mxtics
set format x '%g'
$bounds
set ylabel 'ops/s (pages touched)'
set yrange [0:*]
set format y '%.0s%c'
plot '$csv' every ::1 using $tasks:$ops with linespoints pt 7 lw 2 title 'total', \\
	'' every ::1 using $tasks:$ideal with lines dt 3 lw 2 lc rgb 'black' title 'ideal (linear)'
unset label
set ylabel 'speedup'
set format y '%g'
set yrange [0:*]
plot '$csv' every ::1 using $tasks:$sp with linespoints pt 7 lw 2 title 'speedup T(N)/T(1)' \\
	$ctl_sp, \\
	'' every ::1 using $tasks:(\$$tasks / $t1) with lines dt 3 lw 2 lc rgb 'black' \\
	title 'ideal (linear)'
set ylabel 'share of ideal'
set xlabel 'workers (dashed: node boundaries)'
set format y '%.2f'
set yrange [0:1.15<*]
set key bottom left
plot '$csv' every ::1 using $tasks:$eff with linespoints pt 7 lw 2 \\
	title 'efficiency T(N)/(N T(1))' \\
	$ctl_norm, \\
	1 with lines dt 3 lw 2 lc rgb 'black' title 'ideal (linear)'
unset multiplot
EOT
echo "wrote $png"
