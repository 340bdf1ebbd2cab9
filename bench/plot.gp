# plot.gp - the PNG plots of the benchmark results, run by bench/run.sh:
#
#   gnuplot -e "dir='bench/results'; src='bench'" bench/plot.gp
#
# Reads dir/{core,table,scale,lock}.csv (a missing file skips its plots)
# through src/plotdata.awk, writes dir/{latency,baselines,table,scale,
# locks}.png.
if (!exists("dir")) dir = 'bench/results'
if (!exists("src")) src = 'bench'

cut(what, file) = sprintf("< awk %s -f %s/plotdata.awk %s/%s", what, src, dir, file)
have(file) = system(sprintf("test -s %s/%s && echo 1 || echo 0", dir, file)) + 0

set terminal pngcairo size 1200,560 font ",10" noenhanced
set datafile missing "?"
set grid ytics
set key top left

# --- Per-command latency of shmkv: p50 / p99 / p99.9 -------------------------
if (have("core.csv")) {
	set output dir.'/latency.png'
	set multiplot layout 1,2 title "shmkv: latency per command (ns, log scale; median of runs)"
	set style data histograms
	set style histogram clustered gap 1
	set style fill solid 0.85 border -1
	set logscale y
	set yrange [1:*]
	set ylabel "ns"
	set title "one hot key, integer values"
	plot cut("-v what=lat -v vk=int -v keys=hot", "core.csv") \
		using 2:xtic(1) title "p50", '' using 3 title "p99", '' using 4 title "p99.9"
	set title "uniform over the live set, 16-byte values"
	plot cut("-v what=lat -v vk=16B -v keys=uniform", "core.csv") \
		using 2:xtic(1) title "p50", '' using 3 title "p99", '' using 4 title "p99.9"
	unset multiplot

	set output dir.'/baselines.png'
	set multiplot layout 1,2 title "median latency (p50), ns per command, each implementation (log scale)"
	set key below horizontal font ",9"
	set title "one hot key, integer values"
	plot for [i=2:7] cut("-v what=impls -v vk=int -v keys=hot", "core.csv") \
		using i:xtic(1) linecolor (i-1) title word("shmkv prepared-key mutex-map rculfhash redis redis-pipelined", i-1)
	set title "uniform keys, 16-byte values"
	plot for [i in "2 4 5 6 7"] cut("-v what=impls -v vk=16B -v keys=uniform", "core.csv") \
		using (column(i+0)):xtic(1) linecolor (i-1) title word("shmkv prepared-key mutex-map rculfhash redis redis-pipelined", i-1)
	unset multiplot
	unset logscale y
	set yrange [*:*]
	set key inside top left font ",10"
}

# --- Table size and load factor ---------------------------------------------
if (have("table.csv")) {
	set output dir.'/table.png'
	set style data linespoints
	set logscale y 2
	set xlabel "table size (log2 of slots)"
	set ylabel "ns of CPU time per operation (log scale)"
	set xtics 1
	set title "GET hit with a dependent chain, by load factor, beside a dependent load over the same memory (floor)"
	plot for [l in "25 50 75 90"] cut("-v what=table -v op=get_dep -v load=".l, "table.csv") \
		using 1:2 title "GET, ".l."% load", \
	     cut("-v what=table -v op=get -v load=50", "table.csv") \
		using 1:2 dashtype 2 title "GET back to back, 50%", \
	     cut("-v what=table -v op=set -v load=50", "table.csv") \
		using 1:2 dashtype 3 title "SET back to back, 50%", \
	     cut("-v what=table -v op=floor -v load=50", "table.csv") \
		using 1:2 linewidth 2 linecolor rgb "black" title "floor: dependent load"
	unset logscale y
	unset xlabel
	set xtics autofreq
}

# --- Multi-process scaling --------------------------------------------------
if (have("scale.csv")) {
	set output dir.'/scale.png'
	set terminal pngcairo size 1500,520 font ",10" noenhanced
	set multiplot layout 1,3 title "total throughput, all processes (2 cores; shmkv solid, mutex-guarded map dashed)"
	set style data linespoints
	set xlabel "processes"
	set ylabel "million commands per second"
	set logscale x 2
	set xrange [0.8:10]
	set xtics (1, 2, 4, 8)
	set yrange [0:*]
	set key below horizontal maxcols 3 font ",9"
	mixes = "95/5 50/50 write-only"
	do for [set in "16B:uniform 16B:zipf int:uniform"] {
		v = set[1:strstrt(set, ":")-1]
		k = set[strstrt(set, ":")+1:]
		set title (v eq "int" ? "integer" : "16-byte")." values, ".k." keys"
		plot for [i=1:3] cut("-v what=scale -v impl=shmkv -v mix=".word(mixes, i)." -v value=".v." -v keys=".k, "scale.csv") \
			using 1:2 linewidth 2 linecolor i title "shmkv ".word(mixes, i), \
		     for [i=1:3] cut("-v what=scale -v impl=mutex_map -v mix=".word(mixes, i)." -v value=".v." -v keys=".k, "scale.csv") \
			using 1:2 dashtype 2 linecolor i title "mutex map ".word(mixes, i)
	}
	unset multiplot
	unset logscale x
	unset xlabel
	set xtics autofreq
	set xrange [*:*]
	set yrange [*:*]
	set key inside top left font ",10"
	set terminal pngcairo size 1200,560 font ",10" noenhanced
}

# --- Locks --------------------------------------------------------------------
if (have("lock.csv")) {
	set output dir.'/locks.png'
	set style data histograms
	set style histogram clustered gap 1
	set style fill solid 0.85 border -1
	set logscale y
	set yrange [1:*]
	set ylabel "ns per acquisition (log scale)"
	set xtics rotate by -20
	set title "lock cycle: uncontended, and contended by 2/4/8 processes (ns per acquisition, whole team)"
	plot for [i=2:5] cut("-v what=lock", "lock.csv") \
		using i:xtic(1) title word("uncontended 2-procs 4-procs 8-procs", i-1)
}
