/*
 * locks.pml - a Promela model of the safe lock's takeover protocol: a
 * holder cycling acquire/release on inline grants in its lock cells, and
 * takers that take over a grant whose lease ran out or whose owner died
 * (run by tests/model/run.sh; README.md there, "The lock model", says
 * what is abstracted and why).
 *
 * Two protocols:
 *   OLD   the protocol of commit e1c90e4 (src/lock.c, src/lock_cell.c):
 *         the taker judges the grant that its load of the value word
 *         names (a seqlock read of the cell) and CASes the value word.
 *         The value word keeps only SEQ_BITS bits of the claim sequence
 *         (16 in C), so a holder that cycles 2^SEQ_BITS times meanwhile
 *         makes it bit-identical again: the ABA.
 *   NEW   (default) visit intents and epoch blocking: the taker announces
 *         a visit to the cell, then re-validates the cell's tag and full
 *         ctl before its CAS; a claim whose new sequence ends a round of
 *         2^SEQ_BITS (or of a BLOCKED cell) scans the intents after its
 *         ctl store and abandons the cell if one names it; freeing a cell
 *         DOOMs its tag and scans the intents first.
 *
 * Each atomic block is one load, store or CAS of a shared word, with the
 * local computation after it folded in. The model is sequentially
 * consistent, so each "full fence" of the protocol is implicit; the
 * BUG_*_NO_FENCE variants model a missing one by the store-buffer
 * reordering it allows (the later loads run before the store is seen). A
 * process may die before any step that writes (MAY_DIE): dying right
 * after a read leaves shared memory as dying before it would, so this
 * covers a death between any two steps. A pause is any interleaving.
 *
 * Parameters (spin -DNAME=value):
 *   SEQ_BITS 1..2   sequence bits in the value word (C: 16)
 *   NTAKER 1..2     takers, pids 2..; the holder is pid 1
 *   NACQ            the holder's acquires (default 2^(SEQ_BITS+1): a
 *                   judged claim may sit anywhere in a round and still
 *                   see the value word come back)
 *   NTAKE           grants each taker wins before it stops
 *   TCLAIMS         cell claims a taker makes before it stops (default
 *                   NTAKE + 1; a claim lasts across failed attempts)
 *   MAXKILL         deaths
 *   HCELLS 1..2     cells the holder owns at the start (cell 1 is free
 *                   if 1); a claim with no cell of its own allocates the
 *                   first free block
 *   EXTEND n        the holder extends up to n grants (a fresh cell each)
 *   FREES n         a process may free its cell after a release, n times
 *                   (shmkv_close), so the block can be allocated again
 *   RECLAIM 1       takers run recovery: free a dead owner's cells
 *   TAKER_ACQUIRE 1 a taker that finds the lock FREE acquires it
 *   TAKER_CELLS 0   takers start with no cell (they allocate one)
 *   NFREE           extra cells, free at the start
 *   AUX 0           skip the invariant that the value word names its
 *                   cell's current claim (checked in every state)
 * Fixes of the findings in README.md:
 *   FIX_V_RECHECK     the taker loads the value word again between its
 *                     first ctl load and the fields
 *   FIX_KEEP_BLOCKED  a free that finds a visit leaves the cell BLOCKED
 * Deliberately broken variants of NEW, which spin must reject:
 *   BUG_NO_EPOCH             claims skip the epoch-boundary check
 *   BUG_NO_REVALIDATE        the taker does not re-validate after announcing
 *   BUG_NO_TAG_CHECK         the re-validation compares ctl, not the tag
 *   BUG_FREE_NO_SCAN         a free neither DOOMs nor scans the intents
 *   BUG_FREE_CLAIM_NO_EPOCH  the claim before a free skips the epoch check
 *   BUG_TAKER_NO_FENCE       the re-validation loads pass the intent store
 *   BUG_HOLDER_NO_FENCE      the claim's scan passes its ctl store
 */

#ifndef SEQ_BITS
#define SEQ_BITS 2
#endif
#ifndef NTAKER
#define NTAKER 1
#endif
#ifndef NACQ
#define NACQ (2 * NS)
#endif
#ifndef NTAKE
#define NTAKE 1
#endif
#ifndef TCLAIMS
#define TCLAIMS (NTAKE + 1)
#endif
#ifndef MAXKILL
#define MAXKILL 1
#endif
#ifndef HCELLS
#define HCELLS 2
#endif
#ifndef EXTEND
#define EXTEND 0
#endif
#ifndef FREES
#define FREES 0
#endif
#ifndef RECLAIM
#define RECLAIM 0
#endif
#ifndef TAKER_ACQUIRE
#define TAKER_ACQUIRE 0
#endif
#ifndef TAKER_CELLS
#define TAKER_CELLS 1
#endif
#ifndef NFREE
#define NFREE 0
#endif
#ifndef AUX
#define AUX 1
#endif
#ifdef OLD
#define NEW 0
#else
#define NEW 1
#endif
#ifdef FIX_KEEP_BLOCKED
#define KEEP_BLOCKED 1
#else
#define KEEP_BLOCKED 0
#endif

#define NS    (1 << SEQ_BITS) /* value-word sequences: 0..NS-1 */
#define NPROC (1 + NTAKER)
#define NVIS  NTAKER /* visit intents: one per taker is enough */
/* cells 0-1: the holder's; cell p: taker p's (pids 2..); NFREE free ones */
#define NCELL  (2 + NTAKER + NFREE)
#define NONE   255
#define MAXSEQ 63 /* ctl keeps 6 bits: no run reaches it (checked) */

/* Value word V: FREE (the token is abstracted away), or HELD(cell,
 * seq mod NS) (C: -(2^46 + unit * 2^16 + seq mod 2^16)). */
#define FREE	   0
#define HELD(c, s) (1 + (c) * NS + ((s) % NS))
#define V_CELL(v)  (((v) - 1) / NS)
#define V_SEQ(v)   (((v) - 1) % NS)

/* A cell's ctl: [seq:6 | BLOCKED | CLAIMED] (C: seq in bits 32-63). */
#define CTL(seq, blk, clm) ((seq) * 4 + (blk) * 2 + (clm))
#define CSEQ(x)		   ((x) >> 2)
#define CBLOCKED(x)	   (((x) >> 1) & 1)
#define CCLAIMED(x)	   ((x) & 1)

/* Its block's tag: [gen:4 | pid:2 | DOOM | USED] (C: gen 32, pid 31). */
#define TAG(g, p, doom, used) ((g) * 16 + (p) * 4 + (doom) * 2 + (used))
#define TGEN(t)		      ((t) >> 4)
#define TPID(t)		      (((t) >> 2) & 3)
#define TDOOM(t)	      (((t) >> 1) & 1)
#define TUSED(t)	      ((t) & 1)
#define TFREE(t)	      (((t) & 15) == 0) /* FREE(gen) */

/* A visit intent: 0 empty, or (pid, cell). */
#define INTENT(p, c) ((p) * 8 + (c) + 1)
#define IPID(e)	     ((e) >> 3)
#define ICELL(e)     (((e) & 7) - 1)

/* How a claim takes its cell. */
#define PARKED 1 /* the thread's parked cell: a plain store of ctl */
#define POOL   2 /* an unclaimed cell of ours: a CAS of ctl */
#define ALLOC  3 /* a free block: CAS of the tag, then ctl seeded */

byte V;
byte ctl[NCELL];
byte tag[NCELL];
bool fover[NCELL]; /* the fields: the lease they hold has run out */
byte intent[NVIS];

/* Ghosts: not in the segment, only there to state the properties. */
byte pub_c = NONE; /* the claim V was published for: cell, */
byte pub_seq;	   /* full sequence, */
byte pub_gen;	   /* block generation, */
byte pub_pid;	   /* and the process that published it */
bool killed[NPROC + 1];
bool done[NPROC + 1];
byte nkilled;
bool saturated;

/* One flag per assertion, so that a failure names its property. */
bool lk_taken_grant_is_judged = true;
bool lk_taken_lease_was_over = true;
bool aux_value_names_current_claim = true;

/* shmkv__proc_dead()'s opposite: neither killed nor exited. */
#define ALIVE(p) (!killed[p] && !done[p])

/*
 * The process may die here, just before a step that may write shared
 * memory: that covers a death between any two steps.
 */
#define MAY_DIE                                                                \
	if                                                                     \
	:: nkilled < MAXKILL ->                                                \
		nkilled++;                                                     \
		killed[me] = true;                                             \
		printf("P%d dies\n", me);                                      \
		goto died                                                      \
	:: true                                                                \
	fi

/* n = the sequence after ctl x's; bounded, and checked never to wrap. */
#define SEQ_NEXT(x, n)                                                         \
	n = CSEQ(x) + 1;                                                       \
	if                                                                     \
	:: n >= MAXSEQ ->                                                      \
		saturated = true;                                              \
		assert(!saturated)                                             \
	:: else                                                                \
	fi

/* Ghost: V now names claim (c, seq) of process p; FREE: c == NONE. */
inline publish(c, seq, p)
{
	pub_c = c;
	pub_seq = seq;
	if
	:: c == NONE -> pub_gen = 0
	:: else -> pub_gen = TGEN(tag[c])
	fi;
	pub_pid = p
}

/* A cell claim the pool could give us: ours, not DOOMed, unclaimed. */
#define OURS_FREE(x)                                                           \
	(x != avoid && TUSED(tag[x]) && !TDOOM(tag[x]) && TPID(tag[x]) == me && \
	 !CCLAIMED(ctl[x]))

/*
 * shmkv__cell_claim()'s choice past the parked cell: the first unclaimed
 * cell of ours (the pool, in order), else any free block (a new cell;
 * the allocator's search may end at any). Sets cc and how, or leaves how 0.
 */
#define FREE_BLOCK(x) (x != avoid && TFREE(tag[x]))
inline pick_pool()
{
	cc = 0;
	do
	:: cc < NCELL && OURS_FREE(cc) ->
		how = POOL;
		break
	:: cc < NCELL && !OURS_FREE(cc) -> cc++
	:: cc == NCELL ->
		how = ALLOC;
		if
		:: FREE_BLOCK(0) -> cc = 0
		:: FREE_BLOCK(1) -> cc = 1
		:: FREE_BLOCK(2) -> cc = 2
#if NCELL > 3
		:: FREE_BLOCK(3) -> cc = 3
#endif
#if NCELL > 4
		:: FREE_BLOCK(4) -> cc = 4
#endif
#if NCELL > 5
		:: FREE_BLOCK(5) -> cc = 5
#endif
		:: else -> how = 0
		fi;
		break
	od
}

/*
 * Scans the visit intents for cell x, one load per entry (after the
 * caller's full fence). Out: named.
 */
inline scan_intents(x)
{
	i = 0;
	named = false;
	do
	:: atomic {
		if
		:: intent[i] != 0 && ICELL(intent[i]) == x -> named = true
		:: else
		fi;
		i++;
		if
		:: named || i == NVIS ->
			i = 0;
			break
		:: else
		fi
	}
	od
}

/*
 * lock_cell.c's claim (cell_take for the parked cell, claim_at for the
 * pool, add_cell for a new block), with NEW's epoch check: if the new
 * sequence ends a round of NS, or the cell was BLOCKED, then after the
 * ctl store, a full fence and a scan of the intents; an intent naming the
 * cell makes the claimer store (seq, BLOCKED, unclaimed) and try another
 * cell, twice at most. A new block needs no check: its tag moved on, and
 * every visitor re-validates the tag. Out: cc and nseq, or cc = NONE.
 */
inline claim_cell()
{
	tries = 0;
cl_pick:
	atomic { /* process-local: only we write our cells' ctl */
		how = 0;
		if
		:: parked != NONE && parked != avoid ->
			cc = parked;
			parked = NONE;
			how = PARKED
		:: else -> pick_pool()
		fi;
		if
		:: how == 0 || tries >= 2 ->
			cc = NONE;
			goto cl_done
		:: how == ALLOC
		:: else ->
			old = ctl[cc];
			SEQ_NEXT(old, nseq);
#if NEW && !defined(BUG_NO_EPOCH)
			need = nseq % NS == 0 || CBLOCKED(old)
#elif NEW
			need = CBLOCKED(old)
#endif
		fi
	}
#ifdef BUG_HOLDER_NO_FENCE
	/* no fence: the ctl store waits in the store buffer while the scan
	 * loads run, as if it came after them */
	if
	:: need -> scan_intents(cc)
	:: else
	fi;
#endif
	atomic {
		MAY_DIE;
		if
		:: how == ALLOC -> /* block_alloc: CAS FREE(g) -> USED(g, me) */
			if
			:: TFREE(tag[cc]) ->
				tag[cc] = TAG(TGEN(tag[cc]), me, 0, 1);
				printf("P%d allocates cell %d gen %d\n", me, cc,
				       TGEN(tag[cc]))
			:: else -> goto cl_pick
			fi
		:: else -> /* PARKED: a plain store; POOL: a CAS that cannot
			    * fail here, as only we claim our cells */
			ctl[cc] = CTL(nseq, 0, 1);
			printf("P%d claims cell %d seq %d\n", me, cc, nseq)
		fi
	}
	if
	:: how == ALLOC ->
		/* add_cell: the generation seeds the sequence, so that a reused
		 * block does not repeat its last life's (C: ctl = gen << 32) */
		atomic {
			MAY_DIE;
			nseq = TGEN(tag[cc]);
			ctl[cc] = CTL(nseq, 0, 1)
		}
	:: else
	fi;
#ifndef BUG_HOLDER_NO_FENCE
	/* full fence: paired with the taker's, between its intent store and
	 * its re-validation loads; one of the two sees the other's store */
	if
	:: need -> scan_intents(cc)
	:: else
	fi;
#endif
	atomic {
		if
		:: named
		:: else -> goto cl_done
		fi
	}
	atomic { /* someone visits: abandon the cell, BLOCKED, for another */
		MAY_DIE;
		ctl[cc] = CTL(nseq, 1, 0);
		printf("P%d abandons cell %d: BLOCKED\n", me, cc);
		avoid = cc;
		cc = NONE;
		named = false;
		need = false;
		tries++;
		goto cl_pick
	}
cl_done:
	atomic {
		avoid = NONE;
		tries = 0;
		how = 0;
		old = 0;
		need = false
	}
}

/*
 * Frees cell x, whose tag was rt. OLD: block_free's CAS to FREE(gen+1).
 * NEW: CAS to DOOM, full barrier, scan the intents, then CAS to
 * FREE(gen+1), or undo the DOOM and keep the cell if a visit names it.
 * Out: freed.
 */
inline free_cell(x, rt)
{
#if NEW && !defined(BUG_FREE_NO_SCAN)
	atomic { /* CAS T -> T|DOOM */
		MAY_DIE;
		if
		:: tag[x] == rt ->
			tag[x] = rt | 2;
			doomed = true
		:: else
		fi
	}
	if
	:: doomed ->
		/* full fence: paired with the taker's, between its intent
		 * store and its tag re-validation */
		scan_intents(x);
		if
		:: atomic { /* CAS T|DOOM -> T */
			named ->
			MAY_DIE;
			tag[x] = rt;
			printf("P%d keeps cell %d: a visit names it\n", me, x)
		}
		:: atomic { /* CAS T|DOOM -> FREE(gen + 1) */
			!named ->
			MAY_DIE;
			tag[x] = TAG(TGEN(rt) + 1, 0, 0, 0);
			freed = true;
			printf("P%d frees cell %d -> gen %d\n", me, x, TGEN(tag[x]))
		}
		fi
	:: else
	fi;
	named = false;
	doomed = false
#else
	atomic { /* CAS T -> FREE(gen + 1) */
		MAY_DIE;
		if
		:: tag[x] == rt ->
			tag[x] = TAG(TGEN(rt) + 1, 0, 0, 0);
			freed = true;
			printf("P%d frees cell %d -> gen %d\n", me, x, TGEN(tag[x]))
		:: else
		fi
	}
#endif
}

/*
 * A worker: pid 1 is the holder, which makes NACQ acquires (the fast
 * path: claim, fill, CAS FREE -> HELD), each followed by a release; the
 * others are takers, which take over a grant (slow_attempt with a dead
 * holder or an expired lease) and release it, NTAKE times.
 */
proctype worker()
{
	byte me = _pid;
	byte nops;	       /* holder: acquires; taker: grants won */
	byte ntry;	       /* taker: cell claims */
	byte next, nfree;      /* extends, frees */
	byte parked = NONE;    /* the thread's parked cell (claimed) */
	byte c = NONE, s;      /* the cell claimed for our grant, its seq */
	byte c2, s2;	       /* extend: the fresh cell */
	bool xok;
	byte v1, jc, jtag, jctl; /* the grant a taker judged */
	bool jover;
	byte e = NONE;	       /* our intent entry */
	byte cc, nseq, how, old, i, tries, avoid = NONE; /* claim_cell */
	bool need, named, freed, doomed;
	byte x, rt;

	if
	:: me == 1 -> parked = 0
	:: me > 1 && TAKER_CELLS -> parked = me
	:: else
	fi;
end_next:
	atomic {
		if
		:: me == 1 && nops >= NACQ -> goto w_end
		:: me > 1 && nops >= NTAKE -> goto w_end
		:: else
		fi
	}
#if RECLAIM
	if
	:: me > 1 -> goto w_reclaim
	:: true
	fi;
#endif
	atomic {
		if
		:: c != NONE -> goto w_load /* a taker keeps its claim to retry */
		:: me > 1 && ntry >= TCLAIMS -> goto w_end
		:: else -> ntry++
		fi
	}
	claim_cell();
	atomic {
		if
		:: me == 1 -> nops++
		:: else
		fi;
		if
		:: cc == NONE -> goto end_next /* no cell now: C uses a record */
		:: else
		fi;
		c = cc;
		s = nseq;
		cc = NONE;
		nseq = 0
	}
	atomic { /* shmkv__cell_fill: the fields of a fresh lease */
		MAY_DIE;
		fover[c] = false
	}
w_load:
	if
	:: me == 1 -> goto w_acquire /* fast_acquire: its CAS wants FREE */
	:: else
	fi;
	atomic { /* the engine's load of the value word */
		v1 = V;
		if
		:: v1 == FREE && TAKER_ACQUIRE -> goto w_acquire
		:: v1 == FREE || V_CELL(v1) == c -> goto w_retry
		:: else ->
			jc = V_CELL(v1);
			printf("P%d loads V: cell %d seq %d\n", me, jc, V_SEQ(v1))
		fi
	}

	/* ---- a takeover: shmkv__cell_read, a seqlock read of the cell ---- */
	atomic {
		jtag = tag[jc];
		if
		:: !TUSED(jtag) || TPID(jtag) == 0 || TDOOM(jtag) -> goto w_retry
		:: else
		fi
	}
	atomic {
		jctl = ctl[jc];
		if
		:: !CCLAIMED(jctl) || CSEQ(jctl) % NS != V_SEQ(v1) -> goto w_retry
		:: else
		fi
	}
#ifdef FIX_V_RECHECK
	atomic { /* V still names the claim, so the claim was published and
		  * its fields filled before we copy them */
		if
		:: V != v1 -> goto w_retry
		:: else
		fi
	}
#endif
	atomic { /* the fields; time may pass until their lease is over */
		if
		:: fover[jc] = true
		:: true
		fi;
		jover = fover[jc]
	}
	atomic {
		if
		:: ctl[jc] != jctl -> goto w_retry
		:: else
		fi
	}
	atomic { /* the tag again, then acquire_decide()'s judgement */
		if
		:: tag[jc] != jtag -> goto w_retry
		:: else
		fi;
		if
		:: !jover && ALIVE(TPID(jtag)) -> goto w_retry /* -EBUSY */
		:: else
		fi;
		printf("P%d judges cell %d seq %d: ran out %d\n", me, jc,
		       CSEQ(jctl), jover)
	}
#if NEW
#ifdef BUG_TAKER_NO_FENCE
	goto w_revalidate; /* the loads pass the intent store */
w_visit_late:
#endif
	atomic { /* VISIT BEGIN: an empty (or a dead pid's) entry */
		MAY_DIE;
		if
		:: intent[0] == 0 || !ALIVE(IPID(intent[0])) -> e = 0
#if NVIS > 1
		:: intent[1] == 0 || !ALIVE(IPID(intent[1])) -> e = 1
#endif
		fi;
		intent[e] = INTENT(me, jc);
		printf("P%d visits cell %d\n", me, jc)
	}
#if defined(BUG_TAKER_NO_FENCE) || defined(BUG_NO_REVALIDATE)
	goto w_cas;
#endif
	/* full fence: paired with the claimer's (and the freer's) between
	 * its store and its scan of the intents */
w_revalidate:
#ifndef BUG_NO_TAG_CHECK
	atomic { /* RE-VALIDATE: the same generation, USED, not DOOM */
		if
		:: tag[jc] != jtag -> goto w_unvisit
		:: else
		fi
	}
#endif
	atomic { /* ... and the full ctl, as judged */
		if
		:: ctl[jc] != jctl -> goto w_unvisit
		:: else
		fi;
		printf("P%d re-validates cell %d\n", me, jc);
#ifdef BUG_TAKER_NO_FENCE
		goto w_visit_late
#endif
	}
#endif /* NEW */
w_cas: /* CAS v1 (HELD(jc, judged seq)) -> HELD(c, s) */
	atomic {
		MAY_DIE;
		if
		:: V == v1 ->
			lk_taken_grant_is_judged = pub_c == jc &&
						   pub_gen == TGEN(jtag) &&
						   pub_seq == CSEQ(jctl);
			assert(lk_taken_grant_is_judged);
			lk_taken_lease_was_over =
				fover[pub_c] || !ALIVE(pub_pid);
			assert(lk_taken_lease_was_over);
			V = HELD(c, s);
			publish(c, s, me);
			xok = true;
			printf("P%d takes over: cell %d seq %d\n", me, c, s)
		:: else -> printf("P%d takeover CAS fails\n", me)
		fi
	}
#if NEW
w_unvisit:
	atomic { /* VISIT END */
		if
		:: e != NONE ->
			MAY_DIE;
			intent[e] = 0
		:: else
		fi;
		e = NONE
	}
#endif
	atomic {
		if
		:: xok ->
			xok = false;
			goto w_won
		:: else -> goto w_retry
		fi
	}
w_retry: /* keep the claimed cell for the next attempt */
	atomic {
		v1 = 0;
		jc = 0;
		jtag = 0;
		jctl = 0;
		jover = false;
		goto end_next
	}

	/* ---- an acquire of a FREE lock: CAS FREE(t) -> HELD(c, s) ---- */
w_acquire:
	atomic {
		MAY_DIE;
		v1 = 0;
		if
		:: V == FREE ->
			V = HELD(c, s);
			publish(c, s, me);
			printf("P%d holds: cell %d seq %d\n", me, c, s)
		:: else ->
			printf("P%d acquire fails\n", me);
			if
			:: me == 1 -> goto w_put /* cell_put */
			:: else -> goto w_retry
			fi
		fi
	}
w_won:
	atomic {
		if
		:: me > 1 -> nops++
		:: else
		fi;
		v1 = 0;
		jc = 0;
		jtag = 0;
		jctl = 0;
		jover = false
	}
#if EXTEND
	if
	:: me == 1 && next < EXTEND -> next++
	:: else -> goto w_release
	fi;
	/* shmkv_lock_extend: a fresh cell for the new lease */
	claim_cell();
	atomic {
		if
		:: cc == NONE -> goto w_release /* C: a record */
		:: else
		fi;
		c2 = cc;
		s2 = nseq;
		cc = NONE;
		nseq = 0
	}
	atomic {
		MAY_DIE;
		fover[c2] = false
	}
	atomic { /* CAS HELD(c, s) -> HELD(c2, s2) */
		MAY_DIE;
		if
		:: V == HELD(c, s) ->
			V = HELD(c2, s2);
			publish(c2, s2, me);
			xok = true;
			printf("P%d extends: cell %d seq %d\n", me, c2, s2)
		:: else -> printf("P%d extend: not the owner\n", me)
		fi
	}
	atomic { /* unclaim the cell V no longer names, or the fresh one */
		MAY_DIE;
		if
		:: xok ->
			ctl[c] = CTL(s, 0, 0);
			c = c2;
			s = s2
		:: else -> ctl[c2] = CTL(s2, 0, 0)
		fi;
		c2 = 0;
		s2 = 0;
		xok = false
	}
#endif
w_release:
	atomic { /* CAS HELD(c, s) -> FREE(t) */
		MAY_DIE;
		if
		:: V == HELD(c, s) ->
			V = FREE;
			publish(NONE, 0, 0);
			printf("P%d releases\n", me)
		:: else -> printf("P%d release: not the owner\n", me)
		fi
	}
#if FREES
	if
	:: nfree < FREES -> goto w_free
	:: true
	fi;
#endif
w_put: /* cell_put: park the cell, or unclaim it if one is parked */
	atomic {
		if
		:: parked == NONE ->
			parked = c;
			c = NONE;
			s = 0;
			goto end_next
		:: else
		fi;
		MAY_DIE;
		ctl[c] = CTL(s, 0, 0);
		c = NONE;
		s = 0;
		goto end_next
	}
#if FREES
w_free: /* shmkv_close: the parked cell is unclaimed, then pool_drain
	 * claims it (claim_at, so the epoch check applies) and frees it */
	atomic {
		MAY_DIE;
		nfree++;
		SEQ_NEXT(ctl[c], s);
		ctl[c] = CTL(s, 0, 1);
#if NEW && !defined(BUG_FREE_CLAIM_NO_EPOCH)
		need = s % NS == 0;
#endif
		rt = tag[c]
	}
	if
	:: need -> scan_intents(c)
	:: else
	fi;
	atomic {
		need = false;
		if
		:: named -> /* abandoned, BLOCKED: not freed */
			MAY_DIE;
			ctl[c] = CTL(s, 1, 0);
			named = false;
			goto w_freed
		:: else
		fi
	}
	free_cell(c, rt);
	atomic {
		if
		:: !freed -> /* kept: back to the pool */
			MAY_DIE;
			ctl[c] = CTL(s, KEEP_BLOCKED, 0)
		:: else
		fi
	}
w_freed:
	atomic {
		freed = false;
		rt = 0;
		c = NONE;
		s = 0;
		goto end_next
	}
#endif
#if RECLAIM
w_reclaim: /* recovery: free a dead owner's cell that V does not name */
	atomic {
		x = 0;
		do
		:: x < NCELL && TUSED(tag[x]) && !TDOOM(tag[x]) &&
		   !ALIVE(TPID(tag[x])) ->
			break
		:: x < NCELL && !(TUSED(tag[x]) && !TDOOM(tag[x]) &&
				  !ALIVE(TPID(tag[x]))) ->
			x++
		:: x == NCELL -> goto w_reclaimed
		od;
		rt = tag[x]
	}
	atomic { /* the lock value does not name it */
		if
		:: V != FREE && V_CELL(V) == x -> goto w_reclaimed
		:: else
		fi
	}
	free_cell(x, rt);
w_reclaimed:
	atomic {
		x = 0;
		rt = 0;
		freed = false;
		goto end_next
	}
#endif
w_end:
	done[me] = true;
	goto end_worker;
died:
	skip;
end_worker:
	skip
}

/*
 * In every state, V names the current claim of its cell, as published
 * (the lemma FIX_V_RECHECK relies on).
 */
#define NAMED_OK                                                               \
	(V == FREE ||                                                          \
	 (pub_c == V_CELL(V) && pub_seq % NS == V_SEQ(V) &&                    \
	  tag[pub_c] == TAG(pub_gen, pub_pid, 0, 1) &&                         \
	  ctl[pub_c] == CTL(pub_seq, 0, 1)))

proctype monitor()
{
end_monitor:
	atomic {
		(AUX && !NAMED_OK) ->
		aux_value_names_current_claim = false;
		assert(aux_value_names_current_claim)
	}
}

init
{
	atomic { /* _pid: init 0, the holder 1, takers 2.., the monitor */
		/* the holder's cells: 0 parked (claimed), 1 in its pool */
		tag[0] = TAG(0, 1, 0, 1);
		ctl[0] = CTL(0, 0, 1);
#if HCELLS > 1
		tag[1] = TAG(0, 1, 0, 1);
#endif
#if TAKER_CELLS
		/* each taker's cell, parked */
		tag[2] = TAG(0, 2, 0, 1);
		ctl[2] = CTL(0, 0, 1);
#if NTAKER > 1
		tag[3] = TAG(0, 3, 0, 1);
		ctl[3] = CTL(0, 0, 1);
#endif
#endif
		run worker();
		run worker();
#if NTAKER > 1
		run worker();
#endif
		run monitor()
	}
}
