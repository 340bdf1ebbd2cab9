# plotdata.awk - cuts the series bench/plot.gp draws out of the results CSV.
#
#   awk -v what=MODE [-v k=v ...] -f bench/plotdata.awk FILE.csv
#
#   what=lat    vk=16B keys=uniform  core.csv: cmd p50 p99 p999 (shmkv)
#   what=impls  vk=16B keys=uniform  core.csv: cmd, then the p50 of each
#                                    implementation ("?" when not run)
#   what=table  op=get_dep load=50   table.csv: slots_log2 median min max
#   what=scale  impl=shmkv mix=95/5 value=16B keys=uniform
#                                    scale.csv: procs mops min max
#   what=lock                        lock.csv: kind cycle contended2
#                                    contended4 contended8 (ns)
BEGIN {
	FS = ","
	ncmd = split("GET SET SETNX GETSET DEL DELIFEQ INCR", cmds, " ")
	nimpl = split("shmkv shmkv_prepared mutex_map rculfhash redis " \
		      "redis_pipelined", impls, " ")
	nfig = split("cycle contended2 contended4 contended8", figs, " ")
}
NR == 1 { next }
what == "lat" && $1 == "shmkv" && $3 == vk && $4 == keys {
	lat[$2] = $8 " " $9 " " $10
}
what == "impls" && $3 == vk && $4 == keys { mean[$2, $1] = $8 }
what == "table" && $5 == op && $2 == load { print $1, $6, $7, $8 }
what == "scale" && $1 == impl && $2 == mix && $3 == value && $4 == keys {
	print $5, $6, $7, $8
}
what == "lock" {
	lk[$1, $2] = $3
	if (!($1 in order)) {
		order[$1] = ++nk
		kinds[nk] = $1
	}
}
END {
	if (what == "lat")
		for (i = 1; i <= ncmd; i++)
			if (cmds[i] in lat)
				print cmds[i], lat[cmds[i]]
	if (what == "impls")
		for (i = 1; i <= ncmd; i++) {
			line = cmds[i]
			any = 0
			for (j = 1; j <= nimpl; j++) {
				v = (cmds[i], impls[j]) in mean ? \
				    mean[cmds[i], impls[j]] : "?"
				any += v != "?"
				line = line " " v
			}
			if (any)
				print line
		}
	if (what == "lock")
		for (i = 1; i <= nk; i++) {
			line = "\"" kinds[i] "\""
			for (j = 1; j <= nfig; j++)
				line = line " " lk[kinds[i], figs[j]]
			print line
		}
}
