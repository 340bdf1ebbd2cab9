# instr_table.awk - the table of instructions per call, from instr.csv
# (impl,op,instructions,locked,calls), with issue 12's goals and whether
# the counts meet them: the one list of rows, titles and goals that
# instr.sh (-v fmt=txt, into instr.txt) and report.sh (-v fmt=md, into
# bench/README.md) both print.
#
#   awk -F, -v fmt=txt|md -f bench/instr_table.awk instr.csv

function cell(i, o) {
	if (!((i, o) in ir) || ir[i, o] == "-")
		return "-"
	return sprintf("%.0f (%g)", ir[i, o], ge[i, o])
}

# Goal @g instructions (and at most @l locked, if @l != ""): met?
function meets(i, o, g, l) {
	if (!((i, o) in ir) || ir[i, o] == "-")
		return "?"
	return ir[i, o] <= g && (l == "" || ge[i, o] <= l) ? "met" : "not met"
}

NR > 1 { ir[$1, $2] = $3; ge[$1, $2] = $4 }

END {
	n = split("get_int|set_int|setnx|del|setnx_del|incr|set_16b|" \
		  "get_16b|set_16b_2l|get_16b_2l|del_16b|delifeq_16b", op, "|")
	split("GET int, hot|SET int, hot|SETNX absent, hot|" \
	      "DEL present, hot|SETNX+DEL (lock cycle), hot|INCR, hot|" \
	      "SET 16 B, uniform|GET 16 B, uniform|" \
	      "SET 16 B, uniform, 2-line slots|" \
	      "GET 16 B, uniform, 2-line slots|DEL 16 B, uniform|" \
	      "DELIFEQ 16 B (equal), uniform", title, "|")
	goal["get_int"] = "<= 200: " meets("shmkv", "get_int", 200) \
		"; prepared <= 60: " meets("prepared", "get_int", 60)
	goal["set_int"] = "<= 220: " meets("shmkv", "set_int", 220)
	goal["setnx_del"] = "<= 450: " meets("shmkv", "setnx_del", 450)
	goal["incr"] = "<= 250: " meets("shmkv", "incr", 250)
	goal["set_16b"] = "<= 350 with <= 2 locked: " \
		meets("shmkv", "set_16b", 350, 2)
	goal["set_16b_2l"] = "<= 350 with <= 2 locked: " \
		meets("shmkv", "set_16b_2l", 350, 2)
	if (fmt == "md") {
		print "| command, values, keys | shmkv | prepared key | " \
		      "mutex map | rculfhash | goal (issue 12) |"
		print "| --- | ---: | ---: | ---: | ---: | --- |"
	} else {
		printf("%-30s %12s %12s %12s %12s  %s\n", "op", "shmkv",
		       "prepared", "mutex map", "rculfhash", "goal (issue 12)")
	}
	for (k = 1; k <= n; k++) {
		g = op[k] in goal ? goal[op[k]] : "-"
		if (fmt == "md")
			printf("| %s | **%s** | %s | %s | %s | %s |\n", title[k],
			       cell("shmkv", op[k]), cell("prepared", op[k]),
			       cell("mutex", op[k]), cell("rculfhash", op[k]), g)
		else
			printf("%-30s %12s %12s %12s %12s  %s\n", title[k],
			       cell("shmkv", op[k]), cell("prepared", op[k]),
			       cell("mutex", op[k]), cell("rculfhash", op[k]), g)
	}
	if (!(("safe_lock", "cycle") in ir))
		exit
	if (fmt == "md")
		printf("\nA lock acquire+release, counted the same way over " \
		       "the whole program: safe lock %s, pattern lock %s.\n",
		       cell("safe_lock", "cycle"), cell("pattern_lock", "cycle"))
	else
		printf("\nlock acquire+release: safe lock %s, pattern lock %s\n",
		       cell("safe_lock", "cycle"), cell("pattern_lock", "cycle"))
}
