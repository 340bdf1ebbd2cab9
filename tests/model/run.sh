#!/usr/bin/env bash
# run.sh - model-check the slot protocol (slots.pml, which includes
# defs.pml and monitor.pml), the safe lock's takeover protocol
# (locks.pml: the lock-* checks), the inline value area (area.pml:
# the area-* checks), online growth's migration (migrate.pml: the
# mig-* checks) and the move of a pinned lock value in a migration
# (pinmove.pml: the pin-* checks) with spin.
#
#   tests/model/run.sh           the CI set (2-3 minutes on 2 cores)
#   tests/model/run.sh --full    adds the big runs (20-40 minutes, 5 GB)
#   tests/model/run.sh --trails  print the counterexample of every check
#                                that has one
#   tests/model/run.sh NAME...   only the named checks (see --list)
#
# Every check is one spin run of slots.pml (locks.pml, area.pml,
# migrate.pml, pinmove.pml for the lock-*, area-*, mig-*, pin-* checks)
# with some -D options, and an expectation: "ok"
# (complete search, no violation), "fail:<flag>" (spin must find a counterexample
# naming that assertion flag), "cycle" (spin must find a non-progress
# cycle). A deliberately broken variant that spin does not reject fails
# the run, as does a good model it does reject. README.md here says what
# each check shows. Exit status 0 when every expectation holds, 1
# otherwise, 77 when spin or cc is missing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
jobs=${MODEL_JOBS:-2}
memlim=${MODEL_MEMLIM:-3000} # MB per pan run, CI set
full=0
trails=0
only=()
for a in "$@"; do
	case $a in
	--full) full=1 ;;
	--trails) trails=1 ;;
	--list) only=(--list) ;;
	-h | --help)
		sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	-*)
		echo "run.sh: unknown option $a" >&2
		exit 2
		;;
	*) only+=("$a") ;;
	esac
done

for tool in spin cc; do
	if ! command -v $tool >/dev/null 2>&1; then
		echo "run.sh: $tool not found (scripts/install-deps.sh installs it)" >&2
		exit 77
	fi
done

# name | expectation | spin -D options | pan build options | pan run options
# | what it shows.
S=-DSAT_ASSERT # versions never reach MAXVER here: bounding them cut nothing
C=-DCOLLAPSE   # compress stored states (the 3-worker runs)
# The protocol as src/table.c now has it: the three fixes the model's
# findings led to. The finding-* checks keep modelling the protocol before
# them, as evidence that each fix was needed.
F="-DFIX_ENOSPC -DFIX_FRESH_PID -DFIX_CAP"
L=-DFIX_V_RECHECK # locks.pml: README.md, "The lock model", finding 1
# migrate.pml's configurations (README.md, "The migration model")
M1="-DNNEW=2 -DGROWER_SWEEP=0"
M2="-DNNEW=2 -DGROWER_SWEEP=0 -DHELP=0 -DNKEY=2 -DINIT=2"
M3="-DNNEW=2 -DNPROC=1 -DNOPS=2 -DHELP=0"
M4="-DNNEW=2 -DGROWER_SWEEP=0 -DINIT=3"
M6="-DNNEW=2 -DGROWER_SWEEP=0 -DHELP=0 -DNKEY=2 -DINIT=3"
# pinmove.pml with a value block for the pin (README.md, "The pin-move model")
PB="-DBLOCK -DOPS=1 -DNHOP=1"
checks=(
	"good-3slots|ok|$F $S|-DSAFETY||3 slots, 2 keys homed at slot 0, 2 workers x 2 commands, 1 death"
	"good-4slots-2homes|ok|$F $S -DNSLOT=4 -DHOME1=1|-DSAFETY||4 slots, keys homed at 0 and 1 (overlapping windows that wrap)"
	"good-1key-3ops|ok|$F $S -DNKEY=1 -DNOPS=3|-DSAFETY||3 slots, 1 key, 2 workers x 3 commands, 1 death"
	"good-full-window|ok|$F -DNSLOT=2|-DSAFETY||2 slots: the window fills, so the second pass runs (dead claims, stuck inserts, FRESH slots)"
	"good-3workers-setnx|ok|$F $S -DNPROC=3 -DNOPS=1 -DNKEY=1 -DOPMASK=2|-DSAFETY $C||3 workers SETNX one key at once, 1 death"
	"live-3slots|ok|$F -DWRAP=1|-DNP|-l|no non-progress cycle: some command always completes, whoever stops or dies"
	"broken-no-dupcheck|fail:p1_no_two_members_same_key|$F -DBUG_NO_DUPCHECK -DAUX=0|-DSAFETY||insert promotes without the duplicate check"
	"broken-bound-after-check|fail:p1_no_two_members_same_key|$F -DBUG_BOUND_AFTER_CHECK -DAUX=0|-DSAFETY||probe bound raised after the duplicate check"
	"broken-late-bound|fail:p1_no_two_members_same_key|$F -DBUG_LATE_BOUND -DAUX=0 -DNSLOT=2 -DNOPS=3|-DSAFETY||probe bound raised after INSERTING (bites when the inserter dies and a helper promotes)"
	"broken-no-reexamine|fail:p1_no_two_members_same_key|-DFIX_ENOSPC -DFIX_FRESH_PID -DBUG_NO_REEXAMINE -DAUX=0|-DSAFETY||a failed CAS on a later INSERTING slot is not looked at again"
	"broken-no-dead-step|fail:p3_write_lands_in_its_incarnation|$F -DBUG_NO_DEAD_STEP -DNO_RECYCLE_ASSERT -DAUX=0 -DNOPS=3|-DSAFETY||recycling without NONE -> DEAD"
	"broken-no-version|fail:p3_write_lands_in_its_incarnation|$F -DBUG_NO_VERSION -DAUX=0|-DSAFETY||value words without the slot version"
	"broken-no-finish|cycle|$F -DBUG_NO_FINISH -DWRAP=1|-DNP|-l|before commit dedc179: a command re-probes a half given back slot"
	"old-enospc|fail:p4_solo_worker_finds_room|-DSOLO=1 -DNSLOT=2|-DSAFETY||before the fix: -ENOSPC right after the second pass decided a dead worker's insert"
	"old-fresh-livelock|cycle|-DNSLOT=2 -DWRAP=1|-DNP|-l|before the fix: two SETs of one key in a full window recycle each other's FRESH slot forever"
	"old-recheck-cap|fail:p1_no_two_members_same_key|-DRECHECK_CAP=2 -DAUX=0 -DNPROC=3 -DNOPS=1 -DNKEY=1 -DOPMASK=2 -DMAXKILL=0|-DSAFETY||before the fix: at its retries cap (4096; 2 here) the duplicate check moves past a slot that just became MEMBER"
	# The safe lock (locks.pml). L: the new protocol with the fix of the
	# stale-fields finding; lock-finding-stale-fields checks it as proposed.
	"lock-good|ok|$L|-DSAFETY||lock: 1 holder (8 acquires), 1 taker, 2 sequence bits in the value word, 1 death"
	"lock-good-2deaths|ok|$L -DMAXKILL=2|-DSAFETY||lock: the same, both may die"
	"lock-good-extend|ok|$L -DEXTEND=2|-DSAFETY||lock: the holder extends (a fresh cell, then unclaims the old one)"
	"lock-good-free|ok|$L -DFREES=1 -DHCELLS=1|-DSAFETY||lock: a cell freed after a release and allocated again (sequence seeded from the generation)"
	"lock-good-2takers-reclaim|ok|$L -DNTAKER=2 -DSEQ_BITS=1 -DRECLAIM=1|-DSAFETY $C||lock: 2 takers (1 sequence bit) who also free dead owners' cells"
	"lock-good-reuse-3procs|ok|$L -DNTAKER=2 -DSEQ_BITS=1 -DRECLAIM=1 -DTAKER_ACQUIRE=1 -DFREES=1 -DHCELLS=1 -DNACQ=2 -DTCLAIMS=3 -DMAXKILL=0|-DSAFETY $C||lock: a cell freed by recovery is allocated by another process while a taker judged its old life"
	"lock-old-aba|fail:lk_taken_grant_is_judged|-DOLD|-DSAFETY||lock, commit e1c90e4: the value word comes back after 2^SEQ_BITS claims; the taker's CAS replaces a fresh grant"
	"lock-finding-stale-fields|fail:lk_taken_lease_was_over||-DSAFETY||lock, new protocol as proposed: a taker judges a claimed but unfilled cell by the last claim's fields"
	"lock-finding-free-claim|fail:lk_taken_grant_is_judged|$L -DBUG_FREE_CLAIM_NO_EPOCH -DFREES=1 -DHCELLS=1 -DAUX=0|-DSAFETY||lock: the claim before a free (pool_drain) crosses an epoch unchecked; the free keeps the visited cell unblocked"
	"lock-broken-no-epoch|fail:lk_taken_grant_is_judged|$L -DBUG_NO_EPOCH -DAUX=0|-DSAFETY||lock: claims skip the epoch-boundary scan"
	"lock-broken-no-revalidate|fail:lk_taken_grant_is_judged|$L -DBUG_NO_REVALIDATE -DAUX=0|-DSAFETY||lock: the taker CASes right after announcing its visit"
	"lock-broken-no-tag-check|fail:lk_taken_grant_is_judged|$L -DBUG_NO_TAG_CHECK -DFREES=1 -DHCELLS=1 -DAUX=0|-DSAFETY||lock: the re-validation compares ctl but not the tag (a reused block repeats a sequence)"
	"lock-broken-free-no-scan|fail:lk_taken_grant_is_judged|$L -DBUG_FREE_NO_SCAN -DFREES=1 -DHCELLS=1 -DAUX=0|-DSAFETY||lock: freeing a cell without DOOM and the scan of the intents"
	"lock-broken-visit-no-fence|fail:lk_taken_grant_is_judged|$L -DBUG_TAKER_NO_FENCE -DAUX=0|-DSAFETY||lock: no fence between the intent store and the re-validation loads"
	"lock-broken-claim-no-fence|fail:lk_taken_grant_is_judged|$L -DBUG_HOLDER_NO_FENCE -DAUX=0|-DSAFETY||lock: no fence between the claim's ctl store and its scan"
	# The inline value area (area.pml): README.md, "The area model". The
	# broken variants run with -DP3=0, so that spin shows the damage to
	# the area's own invariants.
	"area-good|ok||-DSAFETY||area: 1 slot, 2 workers x 2 commands (SET, GET, DEL of 2 keys), an inline value to start, 1 death"
	"area-good-empty|ok|-DINIT=0|-DSAFETY||area: the same from an EMPTY slot (2 inserts race)"
	"area-good-blocks|ok|-DLENS=7 -DKLEN2=2|-DSAFETY||area: long values too (value blocks replace inline ones), both keys write inline"
	"area-good-2deaths|ok|-DMAXKILL=2|-DSAFETY||area: both workers may die"
	"area-good-3workers|ok|-DNPROC=3 -DNOPS=1|-DSAFETY $C||area: 3 workers x 1 command, 1 death"
	"area-live|ok||-DNP|-l|area: no non-progress cycle (nobody waits for a claim)"
	"area-code|ok|-DCODE -DOPS2=15|-DSAFETY||area: the writer as src/area.h has it (V loaded and checked before the claim, re-checked after), 2 workers x 2 commands, worker 2 may also run recovery's reclaim of a dead claim"
	"area-code-3workers|ok|-DCODE -DNPROC=3 -DNOPS=1 -DOPS2=15|-DSAFETY $C||area: src/area.h's writer, 3 workers x 1 command (worker 2: or a reclaim)"
	"area-code-live|ok|-DCODE|-DNP|-l|area: src/area.h's writer, no non-progress cycle"
	"area-broken-no-state-check|fail:i2_key_cells_intact|-DBUG_NO_STATE_CHECK -DP3=0|-DSAFETY||area: writer without step 2 (the state re-check after its claim)"
	"area-broken-key-no-claim|fail:i2_key_cells_intact|-DBUG_INSERT_NO_CLAIM -DP3=0|-DSAFETY||area: inserter writes its key without claiming the area"
	"area-broken-takeover-num|fail:i4_publish_numbers_unique|-DBUG_TAKEOVER_NO_INC -DP3=0|-DSAFETY||area: takeover of a dead claim keeps its number"
	"area-broken-no-reread|fail:i1_no_torn_read|-DBUG_READER_NO_RECHECK -DP3=0|-DSAFETY||area: reader accepts its copy without loading V again"
	"area-broken-overlap|fail:i1_named_region_intact|-DBUG_OVERLAP -DP3=0|-DSAFETY||area: writer's region ignores V's (off 0 always)"
	"area-broken-claim-wait|cycle|-DBUG_CLAIM_WAIT|-DNP|-l|area: writer claims again until a live claimer lets go"
	"area-code-broken-no-value-check|fail:i1_named_region_intact|-DCODE -DBUG_CODE_NO_VALUE_CHECK -DP3=0|-DSAFETY||area: src/area.h's writer without its re-load of the value word after the claim"
	"area-finding-dead-value|fail:p3_recycled_only_when_dead|-DSPEC_NO_VCHECK|-DSAFETY||area, protocol as written: a writer publishes over the DEAD word of a DEL (after its step 2); the recycler then empties the slot"
	"area-finding-v-first|fail:p3_recycled_only_when_dead|-DSPEC_NO_VCHECK -DV_FIRST|-DSAFETY||area: the same with the state re-checked after each load of V: not a fix"
	# Online growth (migrate.pml): README.md, "The migration model". The
	# configurations: M1 the writers sweep (one step each) and migrate
	# their windows, the grower only flips; M2 windows only, 2 keys, key 0
	# deleted and its slot recycled; M3 one worker (2 commands) and a
	# grower that sweeps, finishes and punches T0; M4 key 0 at offset 1
	# behind an EMPTY home; M6 M4 with 2 keys and windows only.
	"mig-good-help|ok|$M1|-DSAFETY $C||migration: 2 workers x 1 command (stale or not), each takes a sweep step, 1 death"
	"mig-good-2deaths|ok|$M1 -DMAXKILL=2|-DSAFETY $C||migration: M1, any 2 of the 3 processes die"
	"mig-good-windows-2keys|ok|$M2|-DSAFETY $C||migration: windows only, 2 keys, key 0's slot recycled before the growth"
	"mig-good-punch|ok|$M3|-DSAFETY $C||migration: 1 worker x 2 commands, the grower sweeps, finishes and punches T0"
	"mig-good-punch-deleted|ok|$M3 -DINIT=0|-DSAFETY $C||migration: the same, key 0 deleted (NONE) in T0"
	"mig-good-offset|ok|$M4|-DSAFETY $C||migration: key 0 at offset 1 behind an EMPTY home slot"
	"mig-good-offset-2keys|ok|$M6|-DSAFETY $C||migration: the same with 2 keys, windows only"
	"mig-good-freeze-bound|ok|$M6 -DFREEZE_BOUND|-DSAFETY $C||migration: the lead's shape (probe bound frozen) is safe too"
	"mig-live-help|ok|$M1 -DWRAP=1|-DNP $C|-l|migration: no non-progress cycle (M1)"
	"mig-live-punch|ok|$M3 -DWRAP=1|-DNP $C|-l|migration: no non-progress cycle (M3)"
	"mig-broken-no-freeze-empty|fail:p1_no_two_live_copies|$M2 -DAUX=0 -DBUG_NO_FREEZE_EMPTY|-DSAFETY||migration: EMPTY slots are left EMPTY, not sealed"
	"mig-broken-copy-no-freeze|fail:p1_no_two_live_copies|$M1 -DAUX=0 -DBUG_COPY_NO_FREEZE|-DSAFETY||migration: copy and MOVED without freezing the value"
	"mig-broken-copy-no-source-check|fail:p2_copy_carries_current_value|$M3 -DAUX=0 -DBUG_COPY_NO_SOURCE_CHECK|-DSAFETY||migration: the copy CAS without checking that the old slot is still not MOVED"
	"mig-broken-write-before-moved|fail:p2_written_copy_is_the_key|$M3 -DAUX=0 -DBUG_WRITE_BEFORE_MOVED|-DSAFETY||migration: a writer works in T1 without migrating its window"
	"mig-broken-bound-before-home|fail:p1_no_two_live_copies|$M6 -DAUX=0 -DBUG_BOUND_BEFORE_HOME|-DSAFETY $C||migration: the window's bound read before its home slot is MOVED"
	"mig-broken-dupcheck-moved|fail:p1_no_two_live_copies|$M2 -DAUX=0 -DBUG_DUPCHECK_IGNORES_MOVED|-DSAFETY||migration: the duplicate check passes over MOVED slots"
	"mig-broken-reader-no-recheck|fail:p6_no_answer_from_punched_table|$M3 -DAUX=0 -DBUG_READER_NO_RECHECK|-DSAFETY||migration: an answer without a CAS is not checked against gen again"
	"mig-broken-reader-moved|fail:p2_no_lost_key|$M1 -DAUX=0 -DBUG_READER_IGNORES_MOVED|-DSAFETY||migration: a reader of gen 0 passes over MOVED slots"
	"mig-broken-claim-no-recheck|fail:p6_no_write_in_punched_table|$M3 -DAUX=0 -DBUG_NO_CLAIM_RECHECK|-DSAFETY||migration: a claim of a zero word does not re-read gen"
	"mig-broken-none-zero|fail:p6_no_write_in_punched_table|$M3 -DINIT=0 -DAUX=0 -DBUG_NONE_ZERO|-DSAFETY||migration: NONE of version 0 is the zero word"
	"mig-broken-finish-no-sweep|fail:p5_finish_only_when_all_moved|$M1 -DAUX=0 -DBUG_FINISH_NO_SWEEP|-DSAFETY||migration: a claim cursor, and whoever moved the last slot finishes"
	"mig-broken-wait-frozen|cycle|$M1 -DWRAP=1 -DBUG_WAIT_FROZEN|-DNP|-l|migration: a writer that finds its value FROZEN waits for the move"
	"pin-good|ok||-DSAFETY||pin move: a holder (2 ops: release, renew, acquire, close) against a copier and a reclaimer, 1 death"
	"pin-good-gen0|ok|-DINIT_GEN=0|-DSAFETY||pin move: the same from before the flip (the holder works in T0 until it finds FROZEN)"
	"pin-good-2deaths|ok|-DMAXKILL=2|-DSAFETY||pin move: the holder and the copier may both die"
	"pin-good-3ops|ok|-DNHOP=3|-DSAFETY||pin move: 3 holder operations"
	"pin-good-gen0-3ops-2deaths|ok|-DNHOP=3 -DMAXKILL=2 -DINIT_GEN=0|-DSAFETY $C||pin move: 3 holder operations from before the flip, 2 deaths"
	"pin-good-2copiers|ok|-DNCOPY=2 -DNHOP=1 -DRSTEPS=1|-DSAFETY $C||pin move: 2 copiers and the holder's window, 1 operation, 1 death"
	"pin-fix-moved-recheck|ok|-DRULE_MOVED -DFIX_BP_RECHECK|-DSAFETY||pin move: the other reclaimer rule (a MOVED old slot names nothing) with the back-pointer loaded again"
	"pin-proposal|fail:p1_never_freed_while_named|-DPROPOSAL|-DSAFETY||pin move: §11 as proposed (back-pointer CAS before the copy CAS; a MOVED old slot names nothing)"
	"pin-broken-bp-first|fail:p1_never_freed_while_named|-DBUG_BP_FIRST|-DSAFETY||pin move: the back-pointer CAS before the copy CAS"
	"pin-finding-bp-first-recycled|fail:p1_never_freed_while_named|-DBUG_BP_FIRST -DFIX_T1_SKIP -DFIX_BP_RECHECK|-DSAFETY||pin move: back-pointer first, even with a reclaimer that waits for the finish: the copy lands in another slot"
	"pin-broken-copied-no-bp|fail:p1_never_freed_while_named|-DBUG_COPIED_NO_BP|-DSAFETY||pin move: the copied-already path leaves the back-pointer in T0"
	"pin-broken-only-new|fail:p1_never_freed_while_named|-DBUG_RECLAIM_ONLY_NEW|-DSAFETY||pin move: a back-pointer naming the old table never counts"
	"pin-broken-rule-moved|fail:p1_never_freed_while_named|-DRULE_MOVED|-DSAFETY||pin move: a MOVED old slot names nothing, back-pointer loaded once"
	"pin-broken-no-gen-recheck|fail:p1_never_freed_while_named|-DBUG_NO_GEN_RECHECK|-DSAFETY||pin move: the judgement does not load gen again (reads the punched old slot)"
	"pin-broken-no-window|fail:p3_one_table_holds_the_lock|-DBUG_NO_WINDOW|-DSAFETY||pin move: the holder's engine works in T1 without migrating the key's old slot"
	"pin-broken-keep-orphan|fail:p2_no_leak|-DBUG_KEEP_ORPHAN|-DSAFETY||pin move: a back-pointer into the punched table keeps its cell (a leak)"
	"pin-block-good|ok|$PB|-DSAFETY||block hand-over: a value block copied by moving its back-pointer, against a writer that replaces and frees it and a reclaimer, 1 death"
	"pin-block-good-gen0-2deaths|ok|$PB -DINIT_GEN=0 -DMAXKILL=2|-DSAFETY||block hand-over: from before the flip, the writer and the copier may both die"
	"pin-block-broken-moved-frees|fail:p1_never_freed_while_named|$PB -DBUG_MOVED_FREES|-DSAFETY||block hand-over: the MOVED winner still frees the block its copy names"
	"pin-block-broken-bp-first|fail:p1_never_freed_while_named|$PB -DBUG_BP_FIRST|-DSAFETY||block hand-over: the back-pointer CAS before the copy CAS"
	"pin-block-broken-copied-no-bp|fail:p1_never_freed_while_named|$PB -DBUG_COPIED_NO_BP|-DSAFETY||block hand-over: a copier dead after its copy CAS, and the next mover leaves the back-pointer in T0"
)
if [ "$full" = 1 ]; then
	memlim=${MODEL_MEMLIM:-8000}
	checks+=(
		"good-2deaths|ok|$F $S -DMAXKILL=2|-DSAFETY||3 slots, 2 keys, both workers may die"
		"good-readonly-get|ok|$F $S -DRO_GET=1|-DSAFETY||GETs on a read-only handle (a DEAD value reads as absent)"
		"live-solo-3slots|ok|$F $S -DSOLO=1|-DSAFETY||a worker left alone never gets -ENOSPC (3 slots)"
		"fix-enospc|ok|-DSOLO=1 -DNSLOT=2 -DFIX_ENOSPC|-DSAFETY||proposed fix: look the key up again after helping"
		"fix-fresh-pid|ok|-DNSLOT=2 -DWRAP=1 -DFIX_FRESH_PID -DFIX_ENOSPC|-DNP|-l|proposed fix: recycle a FRESH slot only when its inserter is dead"
		"fix-both-safe|ok|-DNSLOT=2 -DFIX_FRESH_PID -DFIX_ENOSPC|-DSAFETY||the two fixes keep every safety property"
		"fix-recheck-cap|ok|$S -DRECHECK_CAP=2 -DFIX_CAP -DNPROC=3 -DNOPS=1 -DNKEY=1 -DOPMASK=2|-DSAFETY $C||proposed fix: at the cap the duplicate check gives up with -EAGAIN"
		"full-3workers|ok|$F $S -DNPROC=3 -DNOPS=1 -DNKEY=1|-DSAFETY $C||3 workers x 1 command (any), 1 key, 1 death"
		"full-3workers-2deaths|ok|$F $S -DNPROC=3 -DNOPS=1 -DNKEY=1 -DMAXKILL=2|-DSAFETY $C||3 workers x 1 command (any), 1 key, 2 deaths"
		"full-live-3workers-setnx|ok|$F -DNPROC=3 -DNOPS=1 -DNKEY=1 -DOPMASK=2 -DWRAP=1|-DNP $C|-l|no non-progress cycle: 3 workers SETNX one key, 1 death"
		"lock-full-2takers|ok|$L -DNTAKER=2|-DSAFETY $C||lock: 1 holder (8 acquires), 2 takers, 2 sequence bits, 1 death"
		"lock-full-2takers-reclaim|ok|$L -DNTAKER=2 -DRECLAIM=1|-DSAFETY $C||lock: the same, the takers also free dead owners' cells"
		"lock-full-reuse-3procs|ok|$L -DNTAKER=2 -DSEQ_BITS=1 -DRECLAIM=1 -DTAKER_ACQUIRE=1 -DFREES=1 -DHCELLS=1 -DNACQ=1 -DNTAKE=2 -DMAXKILL=0|-DSAFETY $C||lock: cells reused across processes, the takers winning twice"
		"lock-full-free-extend|ok|$L -DFREES=2 -DEXTEND=2 -DHCELLS=1 -DMAXKILL=2|-DSAFETY $C||lock: frees, reuse and extends together, 2 deaths"
		"lock-full-seq3|ok|$L -DSEQ_BITS=3|-DSAFETY||lock: 3 sequence bits, 16 acquires"
		"area-full-empty-3cmds|ok|-DINIT=0 -DNOPS=3|-DSAFETY $C||area: from an EMPTY slot, 2 workers x 3 commands"
		"area-full-live-3workers|ok|-DNPROC=3 -DNOPS=1|-DNP $C|-l|area: no non-progress cycle, 3 workers x 1 command"
		"area-full-3workers-rw|ok|-DNPROC=3 -DNOPS=2 -DOPS1=2 -DOPS2=1 -DOPS3=5|-DSAFETY $C||area: a reader (2 GETs), a writer (2 SETs) and a worker (2 SETs or DELs), 1 death"
		"area-full-code-3workers-rw|ok|-DCODE -DNPROC=3 -DNOPS=2 -DOPS1=2 -DOPS2=1 -DOPS3=5|-DSAFETY $C||area: src/area.h's writer; a reader (2 GETs), a writer (2 SETs), a worker (2 SETs or DELs)"
		"area-full-code-no-state-check|ok|-DCODE -DBUG_NO_STATE_CHECK -DNPROC=3 -DNOPS=1|-DSAFETY $C||area: src/area.h's writer without its state re-check after the claim still passes (its value re-check covers it, README)"
		"area-full-code-empty-3cmds|ok|-DCODE -DINIT=0 -DNOPS=3|-DSAFETY $C||area: src/area.h's writer from an EMPTY slot, 2 workers x 3 commands"
		"mig-full-3old|ok|-DNOLD=3 -DNNEW=4 -DNKEY=2 -DHOME1=1 -DNHOME1=2 -DINIT=3 -DGROWER_SWEEP=0|-DSAFETY $C||migration: 3 old slots, 4 new, 2 keys, writers sweep and migrate windows, 1 death"
		"mig-full-3old-windows|ok|-DNOLD=3 -DNNEW=3 -DGROWER_SWEEP=0 -DHELP=0 -DNKEY=2 -DINIT=3|-DSAFETY $C||migration: 3 old slots, 3 new, 2 keys, windows only, 1 death"
		"mig-full-help-2ops|ok|$M1 -DNOPS=2 -DINIT=2 -DMAXKILL=0|-DSAFETY $C||migration: 2 workers x 2 commands sweep and finish, key 0 recycled before the growth"
		"mig-full-3workers-setnx|ok|$M1 -DNPROC=3 -DOPMASK=2 -DMAXKILL=0|-DSAFETY $C||migration: 3 workers SETNX one key, each a sweep step and its window, no death"
		"mig-full-grower-2workers|ok|-DNNEW=2 -DOPMASK=3 -DMAXKILL=0|-DSAFETY $C||migration: 2 workers (SET, SETNX) sweep against a grower that sweeps too"
		"pin-full-2copiers|ok|-DNCOPY=2|-DSAFETY $C||pin move: 2 copiers and the holder's window, 2 holder operations, 1 death"
		"pin-full-2copiers-gen0|ok|-DNCOPY=2 -DINIT_GEN=0 -DNHOP=1|-DSAFETY $C||pin move: 2 copiers from before the flip, 1 holder operation"
		"pin-block-full-2copiers|ok|$PB -DNCOPY=2|-DSAFETY $C||block hand-over: 2 copiers and the writer's window, 1 death"
		"lock-fix-keep-blocked|ok|$L -DBUG_FREE_CLAIM_NO_EPOCH -DFIX_KEEP_BLOCKED -DFREES=2 -DHCELLS=1|-DSAFETY $C||lock: the other fix of the free-claim finding: a free that finds a visit leaves the cell BLOCKED"
	)
fi

if [ "${only[0]:-}" = --list ]; then
	for c in "${checks[@]}"; do
		IFS='|' read -r name expect _ _ _ what <<<"$c"
		printf '%-26s %-40s %s\n' "$name" "$expect" "$what"
	done
	exit 0
fi

work=${MODEL_WORK:-$(mktemp -d /tmp/shmkv-model.XXXXXX)}
mkdir -p "$work"

# model_of NAME: the model file a check runs.
model_of() {
	case $1 in
	lock-*) echo locks.pml ;;
	area-*) echo area.pml ;;
	mig-*) echo migrate.pml ;;
	pin-*) echo pinmove.pml ;;
	*) echo slots.pml ;;
	esac
}

# run_check NAME DEFS CFLAGS PANFLAGS: builds and runs pan in $work/NAME.
# Runs as a background job: its cd stays in the job.
run_check() {
	local dir=$work/$1 pml
	pml=$(model_of "$1")
	rm -rf "$dir"
	mkdir -p "$dir"
	cp "$here"/*.pml "$dir"/
	cd "$dir" || return
	# shellcheck disable=SC2086 # option lists
	if ! spin -a $2 "$pml" >spin.log 2>&1 ||
		! cc -O2 -w $3 -DMEMLIM="$memlim" -o pan pan.c >cc.log 2>&1; then
		echo "build failed" >error
		return
	fi
	# shellcheck disable=SC2086
	./pan -m2000000 $4 >pan.log 2>&1 || true
	if [ -e "$pml.trail" ]; then
		# shellcheck disable=SC2086
		spin -t $2 "$pml" 2>&1 |
			grep -E '^ *P[0-9]|CYCLE|assertion violated' |
			sed 's/^ *//' >trail.txt || true
	fi
}

# On ^C or kill, stop our own jobs and what they run (spin, cc, pan).
stop_jobs() {
	local p
	for p in $(jobs -p); do
		pkill -P "$p" 2>/dev/null || true
		kill "$p" 2>/dev/null || true
	done
}
trap 'stop_jobs; exit 130' INT TERM

# verdict NAME EXPECT: prints one line; returns 1 if the expectation fails.
verdict() {
	local dir=$work/$1 expect=$2 log=$work/$1/pan.log got stats
	if [ -e "$dir/error" ] || [ ! -s "$log" ]; then
		printf 'FAIL  %-26s spin or pan did not run (see %s)\n' "$1" "$dir"
		return 1
	fi
	stats=$(awk '/states, stored/ { s = $1 } /transitions \(/ { t = $1 }
		/elapsed time/ { e = $4 } /total actual memory/ { m = $1 }
		END { printf "%s states, %s transitions, %s s, %d MB", s, t, e, m }' "$log")
	# pan stops at the first error, so only an error-free search must
	# also be complete.
	if grep -qE 'pan:[0-9]+: non-progress cycle' "$log"; then
		got=cycle
	elif grep -q 'errors: [1-9]' "$log"; then
		got="fail:$(grep -oE 'assertion violated [a-z0-9_]+' "$log" | head -1 |
			sed 's/assertion violated //')"
		[ "$got" != fail: ] || got="fail:$(grep -m1 -oE 'pan:[0-9]+: [^(]*' "$log")"
	elif grep -qE 'Search not completed|reached -DMEMLIM|search depth too small' "$log"; then
		got=incomplete
	else
		got=ok
	fi
	if [ "$got" = "$expect" ]; then
		case $expect in
		ok) printf 'PASS  %-26s no violation: %s\n' "$1" "$stats" ;;
		cycle) printf 'PASS  %-26s spin finds a non-progress cycle (%s)\n' "$1" "$stats" ;;
		*) printf 'PASS  %-26s spin finds a counterexample: %s (%s)\n' "$1" "${got#fail:}" "$stats" ;;
		esac
		if [ "$trails" = 1 ] && [ -s "$dir/trail.txt" ]; then
			sed 's/^/        /' "$dir/trail.txt"
		fi
		return 0
	fi
	printf 'FAIL  %-26s expected %s, got %s (%s); see %s\n' "$1" "$expect" "$got" "$stats" "$dir"
	[ ! -s "$dir/trail.txt" ] || sed 's/^/        /' "$dir/trail.txt"
	return 1
}

selected=()
for c in "${checks[@]}"; do
	IFS='|' read -r name _ _ _ _ _ <<<"$c"
	if [ ${#only[@]} -eq 0 ] || [[ " ${only[*]} " == *" $name "* ]]; then
		selected+=("$c")
	fi
done
if [ ${#selected[@]} -eq 0 ]; then
	echo "run.sh: no such check: ${only[*]} (see --list)" >&2
	exit 2
fi

echo "model: $(spin -V | head -1), $jobs jobs, work dir $work"
start=$SECONDS
for c in "${selected[@]}"; do
	IFS='|' read -r name _ defs cflags panflags _ <<<"$c"
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n || true
	done
	run_check "$name" "$defs" "$cflags" "$panflags" &
done
wait

failed=0
for c in "${selected[@]}"; do
	IFS='|' read -r name expect _ _ _ _ <<<"$c"
	verdict "$name" "$expect" || failed=$((failed + 1))
done
printf 'model: %d checks, %d failed, %d s\n' "${#selected[@]}" "$failed" \
	$((SECONDS - start))
if [ "$failed" -eq 0 ] && [ -z "${MODEL_WORK:-}" ]; then
	rm -rf "$work"
fi
[ "$failed" -eq 0 ]
