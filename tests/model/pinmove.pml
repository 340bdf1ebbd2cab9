/*
 * pinmove.pml - moving a pinned lock value during online growth (issue
 * 13): the back-pointer of the owned block (lock cell) that a VAL_PIN_INT
 * value names, while the migration copies the pin from old slot s of T0
 * to new slot n of T1 (migration-design.md §11; tests/model/README.md,
 * "The pin-move model").
 *
 * Shared words. T0 is one slot, s (the lock key's old slot): a state word
 * (MEMBER or MOVED; zero once punched) and a value word. T1 has NNEW
 * slots for the same key: state (EMPTY/MEMBER, with a version) and value.
 * The life word's generation `gen`: 0 = T0 alone, 1 = migrating T0 -> T1,
 * 2 = T1 alone (T0 punched: its words read as zero). Two lock cells, both
 * owned by the holder: each has a back-pointer bp[c] (table, index) and a
 * tag, abstracted to "freed or not" (no visits: there are no takers here,
 * locks.pml checks those).
 *
 * Processes (pids): the holder (1) starts holding the lock with cell 0,
 * pinned in s, its back-pointer (0, s), and the cached slot and word of
 * that grant; it releases (fast: a CAS on the cached slot and word; if
 * that fails, through the engine), renews (extend: a fresh cell, through
 * the engine) and acquires again (the engine; a parked cell is reused),
 * then may close (frees its cells that no pin names, judged as a
 * reclaimer does) and exits, or dies. Its engine loads gen: 0 works in
 * T0 (a FROZEN word or MOVED starts it again); 1 migrates s first, then
 * works in T1; 2 works in T1. Copiers (2 .. NCOPY+1) run migrate_slot(s)
 * once and try to finish. The maintainer (never dies) flips gen 0 -> 1 if
 * INIT_GEN is 0, runs RSTEPS reclamation steps concurrently with the rest
 * (recycle T1 slots that a dead inserter left FRESH, reap_slot; judge each
 * cell whose owner is dead and free it if nothing names it), and once
 * everyone else has stopped, migrates s, finishes, and runs a last
 * reclamation step, after which the end-state properties are asserted.
 *
 * migrate_slot(s) is §4's: load state; MOVED: done; load value (state
 * re-checked); freeze it (CAS V -> V|FROZEN); if it is a value, copy it;
 * CAS state -> MOVED. copy(): while s is not MOVED, find the key in T1
 * (insert it, FRESH(me), if absent: the slot protocol, checked in
 * slots.pml and migrate.pml, is one atomic step here), load n's value
 * (state re-checked); DEAD: finish the give-back, again; not FRESH: copied
 * already; else check s is still not MOVED and CAS FRESH -> the value
 * re-encoded for n. A pin's back-pointer moves with one CAS (0,s) -> (1,n)
 * (BPT 0 index 0 -> BPT 1 index n):
 *   default (the fix)  after the copy CAS, and on the "copied already"
 *                      path, so before anyone's MOVED CAS;
 *   PROPOSAL / BUG_BP_FIRST  before the copy CAS (§11 as proposed); a
 *                      failed CAS that does not find (1,n) goes on.
 * named_by_slot (the reclaimer's judgement, and the owner's at close):
 * load gen (g1), load bp; a back-pointer naming T0 while g1 < 2 is judged
 * by s's value word (a pin of the cell, FROZEN or not, MOVED or not), one
 * naming T0 when g1 == 2 names nothing (punched), one naming T1 by that
 * slot's value word; then gen is loaded again and the judgement stands
 * only if it is unchanged. Variants:
 *   PROPOSAL / RULE_MOVED  a back-pointer naming T0 counts only while s
 *                      is not MOVED (value load, then state load);
 *   FIX_BP_RECHECK     the back-pointer is loaded again at the end and
 *                      the judgement stands only if it is unchanged;
 *   FIX_T1_SKIP        while g1 == 1, a back-pointer naming a T1 slot that
 *                      does not pin the cell does not free it (wait for
 *                      the finish);
 *   BUG_RECLAIM_ONLY_NEW  a back-pointer naming T0 never counts;
 *   BUG_NO_GEN_RECHECK the second load of gen is skipped;
 *   BUG_KEEP_ORPHAN    a back-pointer naming the punched T0 keeps the cell;
 *   BUG_NO_WINDOW      the holder's engine works in T1 without migrating s.
 *   BUG_COPIED_NO_BP   (copy first) the "copied already" path does not
 *                      move the back-pointer.
 *
 * BLOCK: the key's value is a value block (a BLOCK word) instead of a
 * pin: the same word names the block (payload PIN(0, q) stands for "names
 * block 0"), and the same back-pointer CAS hands it to the new slot; the
 * copy allocates nothing (migrate.c). What differs: the block was
 * published long ago (settled, pid 0), so a reclaimer judges it whether
 * or not the holder (here a writer) lives; the writer's one operation is
 * a SET of an integer over it, after whose CAS it frees the replaced
 * block (commit.h); and nothing parks or reuses it (OPS=1, NHOP=1).
 *   BUG_MOVED_FREES    the winner of the MOVED CAS frees the block, as when
 *                      each copy had a block of its own.
 *
 * Each atomic block is one load, store or CAS of a shared word, the local
 * computation after it folded in; sequential consistency. A process may
 * die just before any step that writes (MAY_DIE), which covers a death
 * between any two steps.
 *
 * Parameters: NCOPY 1..2 copiers, NNEW 2 (T1's slots), NHOP holder
 * operations, OPS mask of them (1 release, 2 renew, 4 acquire, 8 close),
 * INIT_GEN 0 or 1, RSTEPS concurrent reclamation steps, MAXKILL deaths.
 */

#ifndef NCOPY
#define NCOPY 1
#endif
#ifndef NNEW
#define NNEW 2
#endif
#ifndef NHOP
#define NHOP 2
#endif
#ifndef OPS
#define OPS 15
#endif
#ifndef INIT_GEN
#define INIT_GEN 1
#endif
#ifndef RSTEPS
#define RSTEPS 2
#endif
#ifndef MAXKILL
#define MAXKILL 1
#endif
#ifdef PROPOSAL
#define BUG_BP_FIRST
#define RULE_MOVED
#endif

#define HOLDER 1
#define MAINT  (NCOPY + 2)
#define NP     (MAINT + 1)
#define NOSLOT 255

/* State word [version | state]; MOVED is terminal. Zero: EMPTY v0, which
 * is also what punched memory reads as. */
#define EMPTY	 0
#define MEMBER	 3
#define MOVED	 5
#define SW(s, v) ((v) * 8 + (s))
#define SS(w)	 ((w) & 7)
#define SV(w)	 ((w) >> 3)
#define MAXVER	 3

/*
 * Value word [FROZEN:1 | version:2 | payload:5]. Payloads: NONE, DEAD,
 * FRESH(pid), FREE (the lock is free: an INT, its token abstracted away),
 * PIN(cell, sequence bit) (VAL_PIN_INT). Zero is no value word (the NONE
 * mark): punched memory.
 */
#define P_NONE	   1
#define P_DEAD	   2
#define P_FREE	   3
#define P_FRESH(p) (4 + (p))
#define P_PIN(c, q) (16 + (c) * 2 + (q))
#define VW(v, p)   ((v) * 32 + (p))
#define VFZ	   128
#define VP(x)	   ((x) & 31)
#define VV(x)	   (((x) >> 5) & 3)
#define FROZEN(x)  ((x) >= VFZ)
#define ISPIN(x)   (VP(x) >= 16)
#define PINC(x)	   ((VP(x) - 16) / 2)
#define PINS(x, c) (ISPIN(x) && PINC(x) == (c))
#define ISFRESH(x) (VP(x) >= P_FRESH(1) && VP(x) <= P_FRESH(NP))
#define FPID(x)	   (VP(x) - 4)
#define ISDEAD(x)  (VP(x) == P_DEAD)
#define ISVALUE(x) (VP(x) == P_FREE || ISPIN(x))

/* Back-pointer [table | index] (C: epoch in the top 4 bits); NOBP: the
 * block was never pinned (C: UINT32_MAX). */
#define BP(t, i) ((t) * 4 + (i))
#define BPT(b)	 ((b) / 4)
#define BPI(b)	 ((b) % 4)
#define NOBP	 255
#define BP_OLD	 BP(0, 0)

byte gen = INIT_GEN;
byte st0 = SW(MEMBER, 0);
byte val0 = VW(0, P_PIN(0, 0));
byte st1[NNEW];
byte val1[NNEW];
byte bp[2];
bool freed[2];

/* Ghost state */
byte lockv = P_PIN(0, 0); /* the lock's value, set at each of the holder's CASes */
bool killed[NP];
bool done[NP];
byte nkilled;

bool p1_never_freed_while_named = true;
bool p2_no_leak = true;
bool p3_one_table_holds_the_lock = true;
bool p3_release_finds_its_grant = true;
bool p3_migration_finished = true;
bool aux_versions_fit = true;

#define ALIVE(p) (!killed[p] && !done[p])

#define MAY_DIE                                                                \
	if                                                                     \
	:: me != MAINT && nkilled < MAXKILL ->                                 \
		nkilled++;                                                     \
		killed[me] = true;                                             \
		printf("P%d dies\n", me);                                      \
		goto died                                                      \
	:: true                                                                \
	fi

/* Does a slot that commands still use name cell c with a pin? s counts
 * until it is MOVED (or punched); T1's MEMBER slots always. */
#define LP1(c, i) (SS(st1[i]) == MEMBER && PINS(val1[i], c))
#define LIVEPIN(c) ((SS(st0) == MEMBER && PINS(val0, c)) || LP1(c, 0) || LP1(c, 1))
/* The key's value: s's while s is not MOVED, else its T1 slot's. */
#define T1HOLDS(p, i) (SS(st1[i]) == MEMBER && VP(val1[i]) == (p))
#define LOCKOK                                                                 \
	((SS(st0) == MEMBER && VP(val0) == lockv) ||                            \
	 (SS(st0) != MEMBER && (T1HOLDS(lockv, 0) || T1HOLDS(lockv, 1))))

/* Find the key's MEMBER slot in T1 (one key lives there). */
inline find_new(n)
{
	n = NOSLOT;
	if
	:: SS(st1[0]) == MEMBER -> n = 0
	:: SS(st1[1]) == MEMBER -> n = 1
	:: else
	fi
}

/* The back-pointer CAS of a pin of cell c: (0, s) -> (1, n). A failure
 * means someone moved it already. */
inline bp_move(c, n)
{
	atomic {
		MAY_DIE;
		if
		:: bp[c] == BP_OLD ->
			bp[c] = BP(1, n);
			printf("P%d bp[%d] -> (1,%d)\n", me, c, n)
		:: else
		fi
	}
}

/* Frees cell c (owned_free: its tag's CASes, folded into one). */
inline free_cell(c)
{
	atomic {
		MAY_DIE;
		if
		:: !freed[c] ->
			freed[c] = true;
			printf("P%d frees cell %d\n", me, c)
		:: else
		fi
	}
}

/*
 * migrate_slot(s) with its copy (migration-design.md §4). Locals: w (s's
 * state word), v (its value), n, wn (T1 slot and its state word), x, nv.
 */
inline migrate_old()
{
	skip;
mig_again:
	w = st0;
	if
	:: SS(w) == MOVED -> goto mig_done
	:: SS(w) == EMPTY -> /* punched memory: a seal nobody reads */
		atomic {
			MAY_DIE;
			if
			:: st0 == w -> st0 = SW(MOVED, SV(w))
			:: else
			fi
		};
		goto mig_again
	:: else
	fi;
	atomic {
		v = val0;
		if
		:: st0 != w -> goto mig_again
		:: else
		fi
	};
	if
	:: !FROZEN(v) ->
		atomic {
			MAY_DIE;
			if
			:: val0 == v ->
				val0 = v + VFZ;
				printf("P%d freezes s\n", me)
			:: else -> goto mig_again
			fi
		};
		v = v + VFZ
	:: else
	fi;
	if
	:: !ISVALUE(v) -> goto mig_moved
	:: else
	fi;
cp_loop:
	if
	:: st0 != w -> goto mig_moved /* MOVED by someone: done */
	:: else
	fi;
	atomic {
		find_new(n);
		if
		:: n == NOSLOT -> /* insert the key, FRESH(me) */
			MAY_DIE;
			if
			:: SS(st1[0]) == EMPTY -> n = 0
			:: SS(st1[1]) == EMPTY -> n = 1
			fi;
			st1[n] = SW(MEMBER, SV(st1[n]));
			val1[n] = VW(SV(st1[n]), P_FRESH(me));
			printf("P%d inserts the key in T1 slot %d\n", me, n)
		:: else
		fi;
		wn = st1[n]
	};
	atomic {
		x = val1[n];
		if
		:: st1[n] != wn -> goto cp_loop
		:: else
		fi
	};
	if
	:: ISDEAD(x) -> /* finish the give-back */
		atomic {
			MAY_DIE;
			if
			:: st1[n] == wn ->
				st1[n] = SW(EMPTY, SV(wn) + 1);
				aux_versions_fit = SV(wn) + 1 <= MAXVER;
				assert(aux_versions_fit)
			:: else
			fi
		};
		goto cp_loop
	:: !ISFRESH(x) && !ISDEAD(x) -> /* copied already */
#if !defined(BUG_BP_FIRST) && !defined(BUG_COPIED_NO_BP)
		if
		:: ISPIN(v) -> bp_move(PINC(v), n)
		:: else
		fi;
#endif
		goto mig_moved
	:: else
	fi;
	nv = VW(SV(wn), VP(v));
#ifdef BUG_BP_FIRST
	if
	:: ISPIN(v) -> bp_move(PINC(v), n)
	:: else
	fi;
#endif
	if /* the source check */
	:: st0 != w -> goto mig_moved
	:: else
	fi;
	atomic {
		MAY_DIE;
		if
		:: val1[n] == x ->
			val1[n] = nv;
			printf("P%d copies into T1 slot %d\n", me, n)
		:: else -> goto cp_loop
		fi
	};
#ifndef BUG_BP_FIRST
	if
	:: ISPIN(v) -> bp_move(PINC(v), n)
	:: else
	fi;
#endif
mig_moved:
	atomic {
		MAY_DIE;
		if
		:: st0 == w ->
			st0 = SW(MOVED, SV(w));
			printf("P%d s -> MOVED\n", me)
		:: else -> goto mig_done
		fi
	};
#ifdef BUG_MOVED_FREES
	if
	:: ISPIN(v) -> free_cell(PINC(v))
	:: else
	fi;
#endif
mig_done:
	n = 0; wn = 0; x = 0; nv = 0; v = 0; w = 0
}

/* The finish: gen 1 -> 2 once s is MOVED (the frontier's check folded
 * in: one old slot), and the punch of T0 with it. */
inline finish()
{
	atomic {
		MAY_DIE;
		if
		:: gen == 1 && SS(st0) == MOVED ->
			gen = 2;
			st0 = 0;
			val0 = 0;
			printf("P%d finishes: T0 punched\n", me)
		:: else
		fi
	}
}

/*
 * named_by_slot for cell c: named = 1 (a pin names it, or the judgement
 * did not stand: keep it), 0 (free it). Locals: g1, b, x, y.
 */
inline judge(c)
{
	g1 = gen;
	atomic {
		b = bp[c];
		if
		:: b == NOBP -> printf("P%d judges cell %d: gen %d, no bp\n", me, c, g1)
		:: else -> printf("P%d judges cell %d: gen %d, bp (%d,%d)\n", me, c, g1, BPT(b), BPI(b))
		fi
	};
	if
	:: b == NOBP -> named = 0
#ifdef BUG_KEEP_ORPHAN
	:: b != NOBP && BPT(b) == 0 && g1 == 2 -> named = 1 /* keeps it */
#else
	:: b != NOBP && BPT(b) == 0 && g1 == 2 -> named = 0 /* punched: an orphan */
#endif
	:: b != NOBP && BPT(b) == 0 && g1 < 2 ->
#ifdef BUG_RECLAIM_ONLY_NEW
		named = 0
#else
		atomic {
			x = val0;
			printf("P%d reads s: pin of cell %d: %d\n", me, c, PINS(x, c))
		};
		named = PINS(x, c);
#ifdef RULE_MOVED
		atomic {
			y = st0;
			printf("P%d reads s: MOVED %d\n", me, SS(y) == MOVED)
		};
		if
		:: SS(y) == MOVED -> named = 0
		:: else
		fi
#endif
#endif
	:: b != NOBP && BPT(b) == 1 ->
		atomic {
			x = val1[BPI(b)];
			printf("P%d reads T1 slot %d: pin of cell %d: %d\n", me, BPI(b), c, PINS(x, c))
		};
		named = PINS(x, c);
#ifdef FIX_T1_SKIP
		if
		:: g1 == 1 -> named = 1
		:: else
		fi
#endif
	fi;
#ifdef FIX_BP_RECHECK
	if
	:: bp[c] != b -> named = 1
	:: else
	fi;
#endif
#ifndef BUG_NO_GEN_RECHECK
	if
	:: gen != g1 -> named = 1
	:: else
	fi;
#endif
	g1 = 0; b = 0; x = 0; y = 0
}

/* A reclamation judgement of cell c by someone else than its owner. */
inline reclaim(c)
{
	if
#ifdef BLOCK
	:: !freed[c] -> /* a published block: judged whoever lives */
#else
	:: !ALIVE(HOLDER) && !freed[c] ->
#endif
		judge(c);
		if
		:: !named -> free_cell(c)
		:: else
		fi
	:: else
	fi;
	named = 0
}

/* reap_slot on T1 slot i: a MEMBER whose value a dead inserter left
 * FRESH is given back (value -> DEAD, then state -> EMPTY(v+1)). */
inline reap_new(i)
{
	atomic {
		wn = st1[i];
		x = val1[i];
		if
		:: SS(wn) == MEMBER && ISFRESH(x) && !ALIVE(FPID(x)) ->
			printf("P%d recycles T1 slot %d\n", me, i)
		:: else -> goto reap_done
		fi
	};
	atomic {
		if
		:: val1[i] == x -> val1[i] = VW(SV(wn), P_DEAD)
		:: else -> goto reap_done
		fi
	};
	atomic {
		if
		:: st1[i] == wn ->
			st1[i] = SW(EMPTY, SV(wn) + 1);
			aux_versions_fit = SV(wn) + 1 <= MAXVER;
			assert(aux_versions_fit)
		:: else
		fi
	};
reap_done:
	wn = 0; x = 0
}

#define OP_REL	 1
#define OP_RENEW 2
#define OP_ACQ	 4

proctype holder()
{
	byte me = HOLDER;
	byte w, v, n, wn, x, nv, g1, b, y;
	bool named;
	byte op, nops, g, hc = 0, c2, ct = 0, ci = 0, cw = VW(0, P_PIN(0, 0));
	byte q[2];
	bool holding = true, ok;

next:
	if
	:: nops < NHOP && holding && (OPS & 1) -> op = OP_REL
	:: nops < NHOP && holding && (OPS & 2) -> op = OP_RENEW
	:: nops < NHOP && !holding && (OPS & 4) -> op = OP_ACQ
	:: true -> goto closing
	fi;
	nops++;
	printf("P%d op %d\n", me, op);
	if
	:: op == OP_REL -> /* fast release: the cached slot and word */
		atomic {
			MAY_DIE;
			if
			:: ct == 0 && val0 == cw ->
				val0 = VW(VV(cw), P_FREE);
				lockv = P_FREE;
				ok = true
			:: ct == 1 && val1[ci] == cw ->
				val1[ci] = VW(VV(cw), P_FREE);
				lockv = P_FREE;
				ok = true
			:: else -> ok = false
			fi
		};
		if
		:: ok ->
			holding = false;
#ifdef BLOCK
			free_cell(hc); /* the replaced block (commit.h) */
#endif
			goto next
		:: else
		fi
	:: op == OP_RENEW -> c2 = 1 - hc; q[c2] = 1 - q[c2] /* claim the other cell */
	:: op == OP_ACQ ->
		if /* claim a parked cell: either */
		:: c2 = 0
		:: c2 = 1
		fi;
		q[c2] = 1 - q[c2]
	fi;
	/* the engine */
eng_again:
	g = gen;
	if
	:: g == 0 ->
		w = st0;
		if
		:: SS(w) != MEMBER -> goto eng_again /* MOVED: re-read life */
		:: else
		fi;
		atomic {
			v = val0;
			if
			:: st0 != w -> goto eng_again
			:: else
			fi
		};
		if
		:: FROZEN(v) -> goto eng_again /* re-read life */
		:: else
		fi;
		n = 0
	:: else ->
#ifndef BUG_NO_WINDOW
		if
		:: g == 1 -> migrate_old() /* the key's old window */
		:: else
		fi;
#endif
		atomic {
			find_new(n);
			p3_one_table_holds_the_lock = n != NOSLOT;
			assert(p3_one_table_holds_the_lock);
			wn = st1[n]
		};
		atomic {
			v = val1[n];
			if
			:: st1[n] != wn -> goto eng_again
			:: else
			fi
		}
	fi;
	/* decide */
	if
	:: op == OP_REL || op == OP_RENEW ->
		p3_release_finds_its_grant = VP(v) == P_PIN(hc, q[hc]);
		assert(p3_release_finds_its_grant)
	:: op == OP_ACQ ->
		p3_release_finds_its_grant = VP(v) == P_FREE;
		assert(p3_release_finds_its_grant)
	fi;
	if
	:: op == OP_REL -> nv = VW(VV(v), P_FREE)
	:: else ->
		/* fill the claimed cell: the back-pointer (shmkv__owned_pin), a
		 * plain store, before the CAS that publishes the pin */
		atomic {
			MAY_DIE;
			bp[c2] = BP((g == 0 -> 0 : 1), n)
		};
		nv = VW(VV(v), P_PIN(c2, q[c2]))
	fi;
	atomic {
		MAY_DIE;
		if
		:: g == 0 && val0 == v -> val0 = nv
		:: g != 0 && val1[n] == v -> val1[n] = nv
		:: else -> goto eng_again
		fi;
		lockv = VP(nv);
		printf("P%d op %d done in T%d\n", me, op, (g == 0 -> 0 : 1))
	};
	ct = (g == 0 -> 0 : 1);
	ci = n;
	cw = nv;
	if
	:: op == OP_REL -> holding = false
	:: else -> holding = true; hc = c2
	fi;
#ifdef BLOCK
	if
	:: op == OP_REL -> free_cell(hc) /* the replaced block (commit.h) */
	:: else
	fi;
#endif
	w = 0; v = 0; n = 0; wn = 0; x = 0; nv = 0; g = 0; c2 = 0;
	goto next;

closing:
	if
	:: OPS & 8 -> /* shmkv_close: pool_drain frees the unpinned cells */
		judge(0);
		if
		:: !named -> free_cell(0)
		:: else
		fi;
		judge(1);
		if
		:: !named -> free_cell(1)
		:: else
		fi
	:: true
	fi;
	/* exit: the holder's belief is the lock's value */
	p3_release_finds_its_grant =
		(holding && lockv == P_PIN(hc, q[hc])) || (!holding && lockv == P_FREE);
	assert(p3_release_finds_its_grant);
	done[me] = true;
died:
	skip
}

proctype copier(byte me)
{
	byte w, v, n, wn, x, nv;

	gen >= 1;
	migrate_old();
	finish();
	done[me] = true;
died:
	skip
}

#if NCOPY >= 2
#define OTHERS_STOPPED (!ALIVE(HOLDER) && !ALIVE(2) && !ALIVE(3))
#else
#define OTHERS_STOPPED (!ALIVE(HOLDER) && !ALIVE(2))
#endif

proctype maint()
{
	byte me = MAINT;
	byte w, v, n, wn, x, nv, g1, b, y, r;
	bool named;

#if INIT_GEN == 0
	atomic {
		gen == 0 -> gen = 1; printf("P%d flips: migrating\n", me)
	};
#endif
	do
	:: r < RSTEPS ->
		r++;
		reap_new(0);
		reap_new(1);
		reclaim(0);
		reclaim(1)
	:: break
	od;
	/* shmkv_maintain() once everyone else has stopped: help until even,
	 * then a reclamation step */
	OTHERS_STOPPED;
	migrate_old();
	finish();
	reap_new(0);
	reap_new(1);
	reclaim(0);
	reclaim(1);
	atomic {
		p3_migration_finished = gen == 2;
		assert(p3_migration_finished);
		p3_one_table_holds_the_lock = LOCKOK;
		assert(p3_one_table_holds_the_lock);
		p2_no_leak = (freed[0] || LIVEPIN(0)) && (freed[1] || LIVEPIN(1));
		assert(p2_no_leak)
	};
died:
	skip
}

/* (1) in every state: no freed cell is named by a slot that commands
 * use, and the key's value is where commands look for it. */
active proctype monitor()
{
end_monitor:
	atomic {
		!((!freed[0] || !LIVEPIN(0)) && (!freed[1] || !LIVEPIN(1)) && LOCKOK) ->
		p1_never_freed_while_named =
			(!freed[0] || !LIVEPIN(0)) && (!freed[1] || !LIVEPIN(1));
		assert(p1_never_freed_while_named);
		p3_one_table_holds_the_lock = LOCKOK;
		assert(p3_one_table_holds_the_lock)
	}
}

init
{
	atomic {
		bp[0] = BP_OLD;
		bp[1] = NOBP;
		run holder();
		run copier(2);
#if NCOPY >= 2
		run copier(3);
#endif
		run maint()
	}
}
