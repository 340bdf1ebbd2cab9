/*
 * area.pml - a Promela model of the inline value area of layout 5 (the
 * claim of a slot's bytes past its fixed part, inline values published
 * into them, and the key bytes an inserter writes there), checked with
 * spin (tests/model/run.sh; README.md there, "The area model", says what
 * is abstracted and why). Self-contained: it does not use defs.pml.
 *
 * One slot. Its shared words: the state word [version | pid | state], the
 * value word (NONE(version, DEAD, FRESH), a block value of a version, or
 * INLINE(publish number, len, off)), the area word [publish number |
 * claimer], the key meta (which key the slot holds), and NCELL cells: the
 * bytes past the fixed part, cell 0 first. A key of length l occupies
 * cells [0, l) and its cells hold KEYTAG(key); an inline value (off, len)
 * occupies cells [NCELL - off - len, NCELL - off), and the writer of
 * publish number n fills each of them with n, one store per step, so that
 * a torn copy is visible.
 *
 * Workers run NOPS commands each, any of those OPS<pid> allows:
 *   SET k (1): look the key up; missing: insert it (claim the slot BUSY,
 *     claim the area, write the key cells, release, FRESH, INSERTING,
 *     MEMBER);
 *     then write its value: inline (claim, state re-check, load V, choose
 *     a region disjoint from V's, write the cells, CAS V -> INLINE(n+1),
 *     release), or, when the claim or the room fails or the value is
 *     long, as a value block (engine.c attempt()).
 *   GET k (2): load V, re-check the state word, copy V's region cell by
 *     cell, load V again, accept iff unchanged.
 *   DEL k (4): CAS the value to NONE, then recycle the slot: NONE -> DEAD,
 *     state -> EMPTY(v+1). No claim.
 *   RECLAIM (8): recovery frees a dead thread's claim, number + 1
 *     (area.c shmkv__area_reclaim).
 * A worker may die before any step that writes (MAY_DIE); a claim whose
 * claimer is dead is taken over (publish number + 1).
 *
 * Parameters (spin -DNAME=value):
 *   NPROC 2..3 workers       NOPS commands per worker   MAXKILL deaths
 *   OPS1, OPS2, OPS3 the commands worker 1, 2, 3 may run (mask above)
 *   NKEY 1..2 keys: key 1 has KLEN1 cells, key 2 KLEN2 (NCELL = 4)
 *   LENS the value lengths a SET may write: 1 one cell, 2 two cells,
 *     4 a long value (a value block)
 *   INIT 0: the slot starts EMPTY; 1: key 1 MEMBER with no value;
 *     2: key 1 MEMBER with an inline value (publish 1, one cell, off 0)
 *   RETRIES the writer's publishing CASes before it gives up (a block)
 *   P3 0: leave out the slot protocol's own p3 assertions (the broken
 *     variants, so that spin shows the damage to I1-I4 they do)
 * Broken variants that spin must reject: BUG_NO_STATE_CHECK (writer step
 * 2 left out), BUG_INSERT_NO_CLAIM (the inserter writes its key without
 * claiming the area), BUG_TAKEOVER_NO_INC (takeover keeps the number),
 * BUG_READER_NO_RECHECK (the reader accepts without loading V again),
 * BUG_OVERLAP (the writer's region ignores V's), BUG_CLAIM_WAIT (a writer
 * that finds a live claimer claims again until it gets the area: a
 * non-progress cycle).
 * SPEC_NO_VCHECK: the writer's step 3 as the protocol text has it, which
 * never looks at what V is (README.md, "Findings in the area protocol");
 * V_FIRST: the writer re-checks the state word after each load of V too.
 * CODE: the inline writer as src/area.h (commit ff2e1b5) has it;
 * BUG_CODE_NO_VALUE_CHECK: without its re-load of the value word after
 * the claim (BUG_NO_STATE_CHECK drops its state re-check).
 */

#ifndef NPROC
#define NPROC 2
#endif
#ifndef NOPS
#define NOPS 2
#endif
#ifndef OPS1
#define OPS1 7
#endif
#ifndef OPS2
#define OPS2 7
#endif
#ifndef OPS3
#define OPS3 7
#endif
#ifndef NKEY
#define NKEY 2
#endif
#ifndef KLEN1
#define KLEN1 1
#endif
#ifndef KLEN2
#define KLEN2 3
#endif
#ifndef LENS
#define LENS 3
#endif
#ifndef INIT
#define INIT 2
#endif
#ifndef MAXKILL
#define MAXKILL 1
#endif
#ifndef P3
#define P3 1
#endif
#ifndef RETRIES
#define RETRIES 2
#endif

#define NCELL	4  /* cells past the fixed part: S - 36 bytes */
#define MAXVER	7  /* state versions: 3 bits, asserted never reached */
#define MAXNUM	15 /* publish numbers: 4 bits, asserted never reached */
#define KEYTAG(k) (16 + (k)) /* what key k's cells hold (numbers < 16) */
#define KLEN(k)	  ((k) == 1 -> KLEN1 : KLEN2)

/* State word [version:3 | pid:2 | state:3], as in slots.pml. */
#define EMPTY	  0
#define BUSY	  1
#define INSERTING 2
#define MEMBER	  3
#define W(s, p, v) ((v) * 32 + (p) * 8 + (s))
#define WS(w)	   ((w) & 7)
#define WP(w)	   (((w) >> 3) & 3)
#define WV(w)	   ((w) >> 5)

/*
 * Value word, kind in bits 0-1. NONE (0): bit 2 DEAD, bit 3 FRESH, bits
 * 4-6 the version. A block value (2): bits 4-6 the version (a block
 * reference carries a generation never reused: at least as exact).
 * INLINE (3): bits 2-5 the publish number, 6-7 len, 8-9 off; no version,
 * as in layout.h.
 */
#define K_NONE 0
#define K_VAL  2
#define K_INL  3
#define VKIND(x)	      ((x) & 3)
#define VNONE(v, dead, fresh) ((v) * 16 + (fresh) * 8 + (dead) * 4)
#define VVAL(v)		      ((v) * 16 + 2)
#define VVER(x)		      ((x) >> 4)
#define ISDEAD(x)	      (VKIND(x) == K_NONE && ((x) >> 2 & 1))
#define VINL(n, len, off)     ((off) * 256 + (len) * 64 + (n) * 4 + 3)
#define VN(x)		      (((x) >> 2) & 15)
#define VLEN(x)		      (((x) >> 6) & 3)
#define VOFF(x)		      ((x) >> 8)
/* the first cell of the region (off, len) */
#define RSTART(off, len) (NCELL - (off) - (len))

/* Area word [publish number:4 | claimer pid:2]; pid 0: free. */
#define AREA(n, t) ((n) * 4 + (t))
#define ANUM(a)	   ((a) >> 2)
#define ATID(a)	   ((a) & 3)

mtype = { SET, GET, DEL, RECLAIM };

byte st;	    /* state word */
short val;	    /* value word */
byte area;	    /* area word */
byte kid;	    /* key meta: which key the slot holds */
byte cell[NCELL];   /* the bytes past the fixed part */

/* Ghosts: not in the segment, only there to state the properties. */
byte pubmax;		/* largest publish number published so far */
bool killed[NPROC + 1];
bool done[NPROC + 1];
byte nkilled;

/* One flag per assertion, so that a failure names its property. */
bool i1_no_torn_read = true;		  /* a GET's accepted copy */
bool i1_named_region_intact = true;	  /* monitor */
bool i1_region_in_bounds = true;	  /* the reader's bounds check */
bool i2_key_cells_intact = true;	  /* monitor */
bool i3_claim_released = true;		  /* every command releases */
bool i4_publish_numbers_unique = true;	  /* at each INLINE publish */
bool p3_write_lands_in_its_incarnation = true; /* at each value CAS */
bool p3_value_of_its_incarnation = true; /* the writer's V */
bool p3_recycled_only_when_dead = true;	  /* at each give-back */
bool sat_version = true;		  /* bounds never reached */
bool sat_publish_number = true;

#define ALIVE(p) (!killed[p] && !done[p])
#define OPS_OF(p) ((p) == 1 -> OPS1 : ((p) == 2 -> OPS2 : OPS3))

/* As in defs.pml: dying before a step that writes covers every death. */
#define MAY_DIE                                                                \
	if                                                                     \
	:: nkilled < MAXKILL ->                                                \
		nkilled++;                                                     \
		killed[me] = true;                                             \
		printf("P%d dies\n", me);                                      \
		goto died                                                      \
	:: true                                                                \
	fi

/* state word w -> EMPTY(version + 1), the give-back of table.c */
inline give_back(w)
{
	p3_recycled_only_when_dead = WS(w) != MEMBER || val == VNONE(WV(w), 1, 0);
#if P3
	assert(p3_recycled_only_when_dead);
#endif
	sat_version = WV(w) < MAXVER;
	assert(sat_version);
	st = W(EMPTY, 0, WV(w) + 1);
	printf("P%d gives back -> EMPTY v%d\n", me, WV(st))
}

/*
 * claim(slot) of the protocol: a free area is claimed with its number, a
 * dead claimer's with number + 1 (it may have published number + 1 and
 * died before its release), a live claimer's not at all (got false). The
 * load and the CAS are one step here: a CAS that fails after the load
 * only sends the claimer where a live claimer would (README.md).
 */
inline claim()
{
	atomic {
		MAY_DIE;
		got = true;
		i3_claim_released = ATID(area) != me;
		assert(i3_claim_released);
		if
		:: ATID(area) == 0 ->
			an = ANUM(area);
			area = AREA(an, me)
		:: ATID(area) != 0 && !ALIVE(ATID(area)) ->
#ifdef BUG_TAKEOVER_NO_INC
			an = ANUM(area);
#else
			an = ANUM(area) + 1;
			sat_publish_number = an < MAXNUM;
			assert(sat_publish_number);
#endif
			printf("P%d takes over P%d's claim\n", me, ATID(area));
			area = AREA(an, me)
#ifdef CODE
		:: ATID(area) != 0 && !ALIVE(ATID(area)) ->
			/* area.c: a claim seen held for the first time is left
			 * alone, dead or not */
			got = false
#endif
		:: else ->
			printf("P%d: the area is claimed by P%d\n", me,
			       ATID(area));
			got = false
		fi;
		if
		:: got -> printf("P%d claims the area, number %d\n", me, an)
		:: else
		fi
	}
}

/* what the writer does once it has released its claim */
#define AFTER_DONE	0
#define AFTER_BLOCK	1
#define AFTER_RELOOKUP	2
#define AFTER_GIVE_BACK 3
#define AFTER_RETRY	4 /* CODE: attempt() again */

proctype worker(byte me)
{
	byte nops, k, rlen;
	mtype op;
	byte rw;	/* the MEMBER word the command matched its key in */
	byte bw;	/* the inserter's BUSY word */
	short V;	/* the value word the command works from */
	byte an;	/* publish number: claimed with, then published */
	byte roff, ci, tries, after;
	bool torn, got;

next_op:
	atomic {
		if
		:: nops >= NOPS -> goto finished
		:: else
		fi;
		nops++;
		if
		:: OPS_OF(me) & 1 -> op = SET
		:: OPS_OF(me) & 2 -> op = GET
		:: OPS_OF(me) & 4 -> op = DEL
		:: OPS_OF(me) & 8 -> op = RECLAIM
		fi;
		if
		:: k = 1
#if NKEY > 1
		:: k = 2
#endif
		fi;
		rlen = 0;
		if
		:: op == SET && (LENS & 1) -> rlen = 1
		:: op == SET && (LENS & 2) -> rlen = 2
		:: op == SET && (LENS & 4) -> rlen = 0 /* a value block */
		:: op != SET
		fi;
		printf("P%d %e k%d len %d\n", me, op, k, rlen);
		if
		:: op == RECLAIM -> goto reclaim
		:: else -> goto lookup
		fi
	}
relookup:
	atomic {
		printf("P%d looks k%d up again\n", me, k);
		goto lookup
	}
lookup:
	/* The key compare between two loads of an unchanged state word is
	 * one step (as in slots.pml). */
	atomic {
		if
		:: WS(st) == MEMBER && kid == k ->
			rw = st;
			if
#ifndef CODE
			:: op == SET && rlen > 0 -> goto set_claim
#else
			:: op == SET && rlen > 0 -> goto code_attempt
#endif
			:: op == SET && rlen == 0 -> goto block
			:: op == GET -> goto get
			:: op == DEL -> goto del
			fi
		:: else ->
			if
			:: op == SET -> goto insert
			:: else -> goto op_done
			fi
		fi
	}

	/* ---- the inline writer ---- */
set_claim: /* step 1: a claim that fails sends the value to a block */
	claim();
	atomic { /* step 2: the incarnation the key was matched in */
		if
#ifndef BUG_CLAIM_WAIT
		:: !got -> goto block
#else
		:: !got -> goto set_claim /* waits for the live claimer */
#endif
		:: else
		fi;
#ifndef BUG_NO_STATE_CHECK
		if
		:: st != rw ->
			after = AFTER_RELOOKUP;
			goto set_release
		:: else
		fi;
#endif
		tries = 0
	}
set_load: /* step 3 */
	atomic {
		V = val;
#ifdef V_FIRST
	}
	atomic { /* attempt()'s order: the state re-checked after V's load */
		if
		:: st != rw ->
			after = AFTER_RELOOKUP;
			goto set_release
		:: else
		fi;
#endif
#ifndef SPEC_NO_VCHECK
		/* V is loaded after the state check: the slot may have been
		 * deleted and recycled since, leaving V its DEAD word. Never
		 * publish over it: finish the give-back, as attempt() does. */
		if
		:: ISDEAD(V) ->
			after = AFTER_GIVE_BACK;
			goto set_release
		:: else
		fi;
#endif
		/* Nothing else of another incarnation can be there while the
		 * claim is held: the next inserter needs it before it stores
		 * FRESH. */
#if P3
		p3_value_of_its_incarnation =
			VKIND(V) == K_INL || VVER(V) == WV(rw);
		assert(p3_value_of_its_incarnation);
#endif
		/* the region: off 0, else right past V's */
		roff = 0;
#ifndef BUG_OVERLAP
		if
		:: VKIND(V) == K_INL && VOFF(V) < rlen ->
			roff = VOFF(V) + VLEN(V)
		:: else
		fi;
#endif
		if
		:: RSTART(roff, rlen) < KLEN(k) -> /* no room */
			after = AFTER_BLOCK;
			goto set_release
		:: else
		fi;
		ci = RSTART(roff, rlen)
	}
set_write: /* step 4: plain stores, one cell a step */
	atomic {
		MAY_DIE;
		sat_publish_number = an + 1 < MAXNUM;
		assert(sat_publish_number);
		cell[ci] = an + 1;
		ci++;
		if
		:: ci < NCELL - roff -> goto set_write
		:: else
		fi
	}
	atomic { /* step 5: the linearization point */
		MAY_DIE;
		if
		:: val == V ->
			val = VINL(an + 1, rlen, roff);
			printf("P%d publishes INLINE(%d, len %d, off %d)\n", me,
			       an + 1, rlen, roff);
			p3_write_lands_in_its_incarnation = st == rw;
#if P3
			assert(p3_write_lands_in_its_incarnation);
#endif
			i4_publish_numbers_unique = an + 1 > pubmax;
			assert(i4_publish_numbers_unique);
			pubmax = an + 1;
			an = an + 1;
			after = AFTER_DONE
		:: else ->
			tries++;
			if
#ifndef CODE
			:: tries < RETRIES -> goto set_load
#else
			:: tries < RETRIES -> after = AFTER_RETRY
#endif
			:: else -> after = AFTER_BLOCK
			fi
		fi
	}
set_release: /* step 6 */
	atomic {
		MAY_DIE;
		area = AREA(an, 0);
		printf("P%d releases the area, number %d\n", me, an);
		an = 0;
		V = 0;
		roff = 0;
		ci = 0;
		tries = 0;
		if
		:: after == AFTER_DONE -> goto op_done
		:: after == AFTER_BLOCK -> after = 0; goto block
		:: after == AFTER_RELOOKUP -> after = 0; goto relookup
		:: after == AFTER_GIVE_BACK -> after = 0; goto finish_give_back
		:: after == AFTER_RETRY -> after = 0; goto code_attempt
		fi
	}

	/*
	 * ---- CODE: the inline writer as src/area.h has it ----
	 * engine.c's attempt() loads V and re-checks the state word, decides
	 * (DEAD: finish the give-back), places the region from V
	 * (shmkv__area_place), then shmkv__area_stage() claims, re-loads the
	 * state word and the value word (each must be unchanged), and writes
	 * the bytes; commit() CASes V -> INLINE, and the claim is released
	 * whatever the CAS did. A lost CAS starts the attempt again.
	 */
code_attempt:
	atomic { V = val } /* load-acquire */
	atomic {
		if
		:: st != rw -> goto relookup
		:: st == rw && ISDEAD(V) -> goto finish_give_back
		:: else
		fi;
		roff = 0;
		if
		:: VKIND(V) == K_INL && VOFF(V) < rlen ->
			roff = VOFF(V) + VLEN(V)
		:: else
		fi;
		if
		:: RSTART(roff, rlen) < KLEN(k) -> goto block /* no room */
		:: else
		fi
	}
	claim();
	atomic { /* acquire: the state word, after the claim */
		if
		:: !got -> goto block
#ifndef BUG_NO_STATE_CHECK
		:: got && st != rw ->
			after = AFTER_BLOCK;
			goto set_release
#endif
		:: else
		fi
	}
	atomic { /* acquire: the value word, still V */
#ifndef BUG_CODE_NO_VALUE_CHECK
		if
		:: val != V ->
			after = AFTER_BLOCK;
			goto set_release
		:: else
		fi;
#endif
		ci = RSTART(roff, rlen);
		goto set_write
	}

	/* ---- a value block: engine.c attempt() (checked by slots.pml) ---- */
block:
	atomic { /* load the value, re-check the state word: one step here */
		V = val;
		if
		:: st != rw -> goto relookup
		:: st == rw && ISDEAD(V) -> goto finish_give_back
		:: else
		fi
	}
	atomic {
		MAY_DIE;
		if
		:: val == V ->
			val = VVAL(WV(rw));
			printf("P%d stores a value block\n", me);
			p3_write_lands_in_its_incarnation = st == rw;
#if P3
			assert(p3_write_lands_in_its_incarnation);
#endif
			goto op_done
		:: else -> goto block
		fi
	}

	/* ---- DEL, then the recycling of the slot ---- */
del:
	atomic {
		V = val;
		if
		:: st != rw -> goto relookup
		:: st == rw && ISDEAD(V) -> goto finish_give_back
		:: st == rw && V == VNONE(WV(rw), 0, 0) -> goto recycle
		:: st == rw && VKIND(V) == K_NONE && !ISDEAD(V) &&
		   V != VNONE(WV(rw), 0, 0) ->
			goto op_done /* FRESH: no value to delete */
		:: else
		fi
	}
	atomic {
		MAY_DIE;
		if
		:: val == V ->
			val = VNONE(WV(rw), 0, 0);
			printf("P%d deletes k%d\n", me, k);
			p3_write_lands_in_its_incarnation = st == rw;
#if P3
			assert(p3_write_lands_in_its_incarnation)
#endif
		:: else -> goto del
		fi
	}
recycle: /* NONE -> DEAD, then the state word: no claim */
	atomic {
		MAY_DIE;
		if
		:: val == VNONE(WV(rw), 0, 0) -> val = VNONE(WV(rw), 1, 0)
		:: else -> goto op_done /* a SET came first: the key lives */
		fi
	}
finish_give_back: /* DEAD was seen: the state CAS alone, as table.c */
	atomic {
		MAY_DIE;
		if
		:: st == rw -> give_back(rw)
		:: else
		fi;
		goto relookup
	}

	/* ---- GET ---- */
get:
	atomic { V = val } /* load-acquire */
	atomic {
		if
		:: st != rw -> goto relookup /* not the incarnation it matched */
		:: st == rw && VKIND(V) != K_INL ->
			goto op_done /* not inline: as before */
		:: else
		fi;
		i1_region_in_bounds = VOFF(V) + VLEN(V) <= NCELL;
		assert(i1_region_in_bounds);
		ci = RSTART(VOFF(V), VLEN(V));
		torn = false
	}
get_copy: /* one cell a step */
	atomic {
		torn = torn || cell[ci] != VN(V);
		ci++;
		if
		:: ci < NCELL - VOFF(V) -> goto get_copy
		:: else
		fi
	}
	atomic { /* acquire fence; V' = load(value) */
#ifndef BUG_READER_NO_RECHECK
		if
		:: val != V ->
			torn = false;
			ci = 0;
			goto get /* the value moved: again */
		:: else
		fi;
#endif
		printf("P%d GET k%d: accepts INLINE(%d), torn %d\n", me, k,
		       VN(V), torn);
		i1_no_torn_read = !torn;
		assert(i1_no_torn_read);
		goto op_done
	}

	/* ---- insert (table.c shmkv__insert, one slot) ---- */
insert:
	atomic {
		MAY_DIE;
		if
		:: WS(st) == EMPTY ->
			bw = W(BUSY, me, WV(st));
			st = bw;
			printf("P%d claims the slot for k%d\n", me, k);
			goto ins_claim
		:: WS(st) == BUSY && !ALIVE(WP(st)) -> /* a dead claimant's */
			give_back(st)
		:: WS(st) == INSERTING -> /* decide it (one slot: no copy) */
			st = W(MEMBER, 0, WV(st))
		:: WS(st) == MEMBER && ISDEAD(val) && VVER(val) == WV(st) ->
			give_back(st) /* finish a half done recycling */
		:: WS(st) == MEMBER && kid == k && !ISDEAD(val) ->
			rw = st; /* inserted meanwhile */
			goto relookup
		:: WS(st) == MEMBER && kid != k && val == VNONE(WV(st), 0, 0) ->
			val = VNONE(WV(st), 1, 0) /* recycle: NONE -> DEAD */
		:: else -> /* a live claimant, or a key with a value */
			printf("P%d SET k%d: -ENOSPC\n", me, k);
			goto op_done
		fi;
		goto insert
	}
ins_claim:
#ifndef BUG_INSERT_NO_CLAIM
	claim();
#else
	got = true;
#endif
	atomic { /* key meta */
		if
		:: !got -> goto ins_fail
		:: else
		fi;
		MAY_DIE;
		kid = k;
		ci = 0
	}
ins_key: /* the key bytes, one cell a step */
	atomic {
		MAY_DIE;
		cell[ci] = KEYTAG(k);
		ci++;
		if
		:: ci < KLEN(k) -> goto ins_key
		:: else
		fi
	}
#ifndef BUG_INSERT_NO_CLAIM
	atomic { /* release, number unchanged */
		MAY_DIE;
		area = AREA(an, 0);
		printf("P%d releases the area, number %d\n", me, an);
		an = 0
	}
#endif
	atomic { /* FRESH, as table.c publish() stores it */
		MAY_DIE;
		val = VNONE(WV(bw), 0, 1)
	}
	atomic {
		MAY_DIE;
		ci = 0;
		if
		:: st == bw -> st = W(INSERTING, 0, WV(bw))
		:: else -> goto relookup
		fi
	}
	atomic { /* the duplicate check decides: one slot, no copy */
		MAY_DIE;
		if
		:: st == W(INSERTING, 0, WV(bw)) -> st = W(MEMBER, 0, WV(bw))
		:: else
		fi;
		bw = 0;
		goto relookup
	}
ins_fail: /* a live claimer: give the slot back, try the next (none) */
	atomic {
		MAY_DIE;
		if
		:: st == bw -> give_back(bw)
		:: else
		fi;
		printf("P%d SET k%d: -ENOSPC\n", me, k);
		goto op_done
	}

	/* ---- recovery's and reclamation's shmkv__area_reclaim() ---- */
reclaim:
	atomic {
		MAY_DIE;
		if
		:: ATID(area) != 0 && ATID(area) != me && !ALIVE(ATID(area)) ->
			/* as a takeover, released at once */
			sat_publish_number = ANUM(area) + 1 < MAXNUM;
			assert(sat_publish_number);
			printf("P%d frees dead P%d's claim\n", me, ATID(area));
			area = AREA(ANUM(area) + 1, 0)
		:: else
		fi;
		goto op_done
	}

op_done:
progress_op:
	atomic {
		i3_claim_released = ATID(area) != me;
		assert(i3_claim_released);
		op = 0; k = 0; rlen = 0; rw = 0; bw = 0; V = 0; an = 0;
		roff = 0; ci = 0; tries = 0; after = 0; torn = false; got = false;
		goto next_op
	}
finished:
	done[me] = true;
	goto end_worker;
died:
	atomic { /* its locals are gone */
		op = 0; k = 0; rlen = 0; rw = 0; bw = 0; V = 0; an = 0;
		roff = 0; ci = 0; tries = 0; after = 0; torn = false; got = false;
		nops = 0
	}
end_worker:
	skip
}

/*
 * The invariants, checked in every reachable state.
 * I1: the cells of the region an INLINE value word names hold that
 * publish's bytes (no region is written while the value word names it).
 * I2: the key cells of an INSERTING or MEMBER slot hold its key.
 */
#define INREG(c, x) ((c) >= RSTART(VOFF(x), VLEN(x)) && (c) < NCELL - VOFF(x))
#define I1C(c)	    (!INREG(c, val) || cell[c] == VN(val))
#define I1	    (VKIND(val) != K_INL || (I1C(0) && I1C(1) && I1C(2) && I1C(3)))
#define I2C(c)	    ((c) >= KLEN(kid) || cell[c] == KEYTAG(kid))
#define LIVE	    (WS(st) == INSERTING || WS(st) == MEMBER)
#define I2	    (!LIVE || (I2C(0) && I2C(1) && I2C(2) && I2C(3)))

proctype monitor()
{
end_monitor:
	atomic {
		!(I1 && I2) ->
		i1_named_region_intact = I1;
		assert(i1_named_region_intact);
		i2_key_cells_intact = I2;
		assert(i2_key_cells_intact)
	}
}

/* The slot as INIT says, then the workers and the monitor. */
init
{
	atomic {
#if INIT == 0
		st = W(EMPTY, 0, 0);
		val = VNONE(0, 1, 0);
#else
		st = W(MEMBER, 0, 0);
		kid = 1;
		cell[0] = KEYTAG(1);
#if KLEN1 > 1
		cell[1] = KEYTAG(1);
#endif
#if INIT == 1
		val = VNONE(0, 0, 0);
#else
		val = VINL(1, 1, 0);
		cell[NCELL - 1] = 1;
		area = AREA(1, 0);
		pubmax = 1;
#endif
#endif
		run worker(1);
		run worker(2);
#if NPROC > 2
		run worker(3);
#endif
		run monitor()
	}
}
