/*
 * migrate.pml - online growth of the table: the migration protocol of
 * issue 13 (migration-design.md here), checked with spin against
 * the slot protocol of slots.pml (tests/model/README.md, "The migration
 * model").
 *
 * Two tables share one set of arrays: the old one, T0, is slots
 * 0..NOLD-1, the new one, T1, slots NOLD..NOLD+NNEW-1. The header's life
 * word carries the generation `gen`: 0 = T0 alone, 1 = migrating T0 -> T1,
 * 2 = T1 alone (T0 punched: its words read as zero). Every command loads
 * gen first (L0) and works in the table(s) it names; a command that loaded
 * 0 may still be at work in T0 when the migration runs ("stale").
 *
 * Per old slot (migrate_slot):
 *   EMPTY/BUSY/INSERTING/COLLIDED --CAS--> MOVED           (sealed: no key)
 *   MEMBER: value V --CAS--> V|FROZEN; copy the key with V into T1 (an
 *     insert, then FRESH -> V, only while the old slot is not MOVED);
 *     then state MEMBER --CAS--> MOVED.     (DEAD: straight to MOVED)
 * Writers in generation 1 first take one step of the sweep (the frontier
 * cursor), then migrate their key's old window (the home slot, then the
 * offsets below the bound read after the home is MOVED), then work in T1
 * only. Readers in generation 1 scan T0's window first (an unmoved MEMBER
 * answers, frozen or not; MOVED slots are passed over), then T1. An answer
 * drawn from a miss re-reads gen at its end; one from a slot that holds
 * the key needs not (its state re-check proves the slot was not punched).
 *
 * The slot protocol itself (claim, insert, duplicate check, recycling,
 * attempt) is slots.pml's with the fixes FIX_ENOSPC, FIX_FRESH_PID and
 * FIX_CAP (no retries cap), run in whichever table a command is in, plus:
 * nobody claims a MOVED slot; the duplicate check collides its slot when
 * it meets a MOVED one; a write that finds its value FROZEN starts the
 * command again; a lookup of generation 0 that meets MOVED starts again; a
 * claim of a zero word (version 0: fresh or punched memory) re-reads gen.
 * FREEZE_BOUND adds the lead's frozen probe bound (a raise that finds it
 * frozen gives its slot back): safe too, and not needed (README.md).
 *
 * Parameters: NOLD 2..3, NNEW 2..4, NKEY 1..2, HOME1/NHOME1 key 1's homes,
 * NPROC 1..3 workers (pid 1..NPROC) plus the grower (pid NPROC+1), NOPS
 * commands per worker, OPMASK (1 SET, 2 SETNX, 4 DEL, 8 GET), MAXKILL,
 * HELP 1: each writer of generation 1 takes one sweep step, GROWER_SWEEP
 * 1: the grower sweeps after the flip (0: it only flips), AUX 1: also the
 * supporting invariants, INIT the old table at the start (below), WRAP
 * versions wrap (liveness runs). Broken variants (README.md): BUG_NO_FREEZE_EMPTY,
 * BUG_COPY_NO_FREEZE, BUG_WRITE_BEFORE_MOVED, BUG_BOUND_BEFORE_HOME,
 * BUG_FINISH_NO_SWEEP, BUG_DUPCHECK_IGNORES_MOVED, BUG_READER_NO_RECHECK,
 * BUG_READER_IGNORES_MOVED, BUG_NO_CLAIM_RECHECK, BUG_NONE_ZERO,
 * BUG_COPY_NO_SOURCE_CHECK, BUG_WAIT_FROZEN (liveness).
 */

#ifndef NOLD
#define NOLD 2
#endif
#ifndef NNEW
#define NNEW 3
#endif
#ifndef NKEY
#define NKEY 1
#endif
#ifndef HOME1
#define HOME1 1
#endif
#ifndef NHOME1
#define NHOME1 1
#endif
#ifndef NPROC
#define NPROC 2
#endif
#ifndef NOPS
#define NOPS 1
#endif
#ifndef OPMASK
#define OPMASK 15
#endif
#ifndef MAXKILL
#define MAXKILL 1
#endif
#ifndef MAXVER
#define MAXVER 7
#endif
#ifndef HELP
#define HELP 1
#endif
#ifndef GROWER_SWEEP
#define GROWER_SWEEP 1
#endif
#ifndef AUX
#define AUX 1
#endif
#ifndef WRAP
#define WRAP 0
#endif
/* Key 0 starts in old slot 0 with a value (1), or without (0). */
/* T0 at the start (key 0 homed at slot 0): 1 key 0 with a value in slot 0;
 * 0 key 0 in slot 0 without a value (deleted); 2 slot 0 EMPTY(v1) under a
 * bound of 1 (key 0 deleted and its slot recycled); 3 slot 0 EMPTY(v1),
 * key 0 with a value at offset 1 (slot 1), bound 2. */
#ifndef INIT
#define INIT 1
#endif

#define NS	(NOLD + NNEW)
#define GROWER	(NPROC + 1)
#define NOWORD	255
#define BASE(t) ((t) == 0 -> 0 : NOLD)
#define NT(t)	((t) == 0 -> NOLD : NNEW)
#define HOMEO(kk) ((kk) == 0 -> 0 : HOME1)
#define HOMEN(kk) ((kk) == 0 -> 0 : NHOME1)
#define HOMET(kk, t) ((t) == 0 -> HOMEO(kk) : HOMEN(kk))
/* global index of offset dd of key kk's window in table t */
#define AT(kk, t, dd) (BASE(t) + (HOMET(kk, t) + (dd)) % NT(t))
#define HS(kk, t) (BASE(t) + HOMET(kk, t))

/* State word [version:3 | pid:3 | state:3]; MOVED is new (layout.h: 5). */
#define EMPTY	  0
#define BUSY	  1
#define INSERTING 2
#define MEMBER	  3
#define COLLIDED  4
#define MOVED	  5
#define W(s, p, v) ((v) * 64 + (p) * 8 + (s))
#define WS(w)	   ((w) & 7)
#define WP(w)	   (((w) >> 3) & 7)
#define WV(w)	   ((w) >> 6)

/*
 * Value word [NONE mark:1 | FROZEN:1 | fresh pid:3 | version:3 | VAL:1 |
 * FRESH:1 | DEAD:1]. The NONE mark makes every value word non-zero, so
 * that no CAS expecting one can succeed on punched (zeroed) memory.
 */
#define VFZ 512
#ifndef BUG_NONE_ZERO
#define NMARK 1024
#else
#define NMARK 0
#endif
#define VNONE(v, dead, fresh) (NMARK + (v) * 8 + (fresh) * 2 + (dead))
#define VVAL(v)		      ((v) * 8 + 4)
#define VFRESH(v, p)	      (VNONE(v, 0, 1) + (p) * 64)
#define VMATCH(x, v)	      ((((x) >> 3) & 7) == (v))
#define ISVAL(x)	      (((x) >> 2) & 1)
#define ISFRESH(x)	      (((x) & 6) == 2)
#define FROZEN(x)	      (((x) >> 9) & 1)
#define FRESH_PID(x)	      (((x) >> 6) & 7)
#define ISDEAD(x, v)	      ((x) == VNONE(v, 1, 0))

/* Probe bound: bits 0-5 the bound, bit 6 FROZEN. */
#define BF	  64
#define BND(b)	  ((b) & 63)
#define BFROZ(b)  ((b) >= BF)

mtype = { SET, SETNX, DEL, GET, COPY };

byte st[NS];
byte key[NS];
short val[NS];
byte bnd[NS];
byte gen;	/* the life word's generation */
byte front;	/* the sweep's frontier: old slots below it are MOVED */
#ifdef BUG_FINISH_NO_SWEEP
byte claimc;	/* a claim cursor instead: each helper takes the next slot */
#endif

/* Ghost state */
bool punched;		/* T0's memory was punched (reads as zero) */
bool has_val[NKEY];	/* the key's value, set at each linearization point */
bool killed[GROWER + 1];
bool done[GROWER + 1];
byte nkilled;
byte watch[NPROC + 1];
bool chg[NPROC + 1];

bool p1_no_two_members_same_key = true;
bool p1_no_two_live_copies = true;
bool p2_no_lost_key = true;
bool p2_no_phantom_value = true;
bool p2_written_copy_is_the_key = true;
bool p2_copy_carries_current_value = true;
bool p3_write_lands_in_its_incarnation = true;
bool p3_no_write_to_frozen = true;
bool p3_read_sees_its_incarnation = true;
bool p5_finish_only_when_all_moved = true;
bool p6_no_write_in_punched_table = true;
bool p6_no_answer_from_punched_table = true;
bool aux_visible_copy_is_the_key = true;
bool aux_new_write_with_no_old_member = true;
bool aux_live_slot_within_bound = true;

#define ALIVE(p) (!killed[p] && !done[p])

#define MAY_DIE                                                                \
	if                                                                     \
	:: nkilled < MAXKILL ->                                                \
		nkilled++;                                                     \
		killed[me] = true;                                             \
		printf("P%d dies\n", me);                                      \
		goto died                                                      \
	:: true                                                                \
	fi

inline note_change(kk)
{
	chg[1] = chg[1] || watch[1] == kk + 1;
#if NPROC >= 2
	chg[2] = chg[2] || watch[2] == kk + 1;
#endif
#if NPROC >= 3
	chg[3] = chg[3] || watch[3] == kk + 1;
#endif
}

/* table.c give_back(): slot i from w to EMPTY(v+1); w: the new word or
 * NOWORD. A give-back never applies to a MOVED slot (its CAS expects w). */
inline give_back(i, w)
{
	atomic {
		MAY_DIE;
		if
		:: st[i] == w && (WRAP || WV(w) < MAXVER) ->
			st[i] = W(EMPTY, 0, (WV(w) + 1) % (MAXVER + 1));
			w = st[i]
		:: st[i] == w && !WRAP && WV(w) == MAXVER ->
			killed[me] = true; /* out of versions: stop here */
			goto died
		:: else -> w = NOWORD
		fi
	}
}

inline cas_state(i, expect, new)
{
	atomic {
		MAY_DIE;
		if
		:: st[i] == expect -> st[i] = new
		:: else
		fi
	}
}

/* Are all old slots of key kk's window (frozen bound) MOVED? */
#define OM(s) (WS(st[s]) == MOVED)
#define MK(s, kk) (WS(st[s]) == MEMBER && key[s] == kk)
/* an unmoved MEMBER of kk in T0 */
#if NOLD == 2
#define OLDM(kk) (MK(0, kk) || MK(1, kk))
#else
#define OLDM(kk) (MK(0, kk) || MK(1, kk) || MK(2, kk))
#endif
#ifdef BUG_NO_FREEZE_EMPTY /* the variant counts EMPTY as done */
#define OMF(s) (WS(st[s]) == MOVED || WS(st[s]) == EMPTY)
#else
#define OMF(s) OM(s)
#endif
#if NOLD == 2
#define ALL_MOVED (OMF(0) && OMF(1))
#else
#define ALL_MOVED (OMF(0) && OMF(1) && OMF(2))
#endif

proctype worker(byte me)
{
	byte nops, k, sk, h, tb, L0;
	mtype op, sop;
	byte ri, rw;
	short old, v, mv;
	byte pass, d, lb, idx, w, busy;
	byte ai, awi, adi, ad, aj, awj, akey, ahome, atb;
	byte ms, mw, mret, md, mb, f;
	bool from_claim, helped, did_help, win_done, in_copy;
	bool g0, found;
	bool rp;  /* read T0 while it was punched, since the last life load */
	bool rpv; /* ... at the value load of the slot it answers from */

	if
	:: me == GROWER -> goto grow
	:: else
	fi;
next_op:
	atomic {
		if
		:: nops >= NOPS -> goto finished
		:: else
		fi;
		nops++;
		if
		:: OPMASK & 1 -> op = SET
		:: OPMASK & 2 -> op = SETNX
		:: OPMASK & 4 -> op = DEL
		:: OPMASK & 8 -> op = GET
		fi;
		if
		:: k = 0
#if NKEY > 1
		:: k = 1
#endif
		fi;
		printf("P%d %e k%d\n", me, op, k);
		/* the invocation, for the checks of answers without a CAS */
		g0 = has_val[k];
		watch[me] = k + 1;
		chg[me] = false
	}
begin: /* load the life word: which table(s) */
	atomic {
		L0 = gen;
		rp = false;
		rpv = false;
		if
		:: L0 == 1 && op != GET && !did_help && HELP ->
			did_help = true;
			goto help
		:: L0 == 1 && op != GET && (did_help || !HELP) && !win_done ->
			goto window
		:: L0 == 0 -> tb = 0
		:: else -> tb = 1 /* generation 2, or a reader of 1 starts in T0 below */
		fi;
		if
		:: L0 == 1 && op == GET -> tb = 0
		:: else
		fi;
		goto lookup_start
	}

	/* ---- the sweep: one step (the frontier) ---- */
help:
#ifndef BUG_FINISH_NO_SWEEP
	atomic {
		f = front;
		if
		:: f < NOLD -> ms = f; mret = 1; goto migrate
		:: else -> goto finish
		fi
	}
help_moved: /* slot f is MOVED: advance the frontier past it */
	atomic {
		MAY_DIE;
		if
		:: front == f -> front = f + 1
		:: else
		fi;
		mret = 0; ms = 0;
		if
		:: f + 1 == NOLD -> f = 0; goto finish
		:: else -> f = 0
		fi;
		if
		:: me == GROWER -> goto help
		:: else -> goto begin
		fi
	}
#else /* a claim cursor; whoever moved the last slot finishes */
	atomic {
		MAY_DIE;
		f = claimc;
		if
		:: f < NOLD -> claimc++; ms = f; mret = 1; goto migrate
		:: else -> f = 0; goto help_out
		fi
	}
help_moved:
	atomic {
		if
		:: f == NOLD - 1 -> f = 0; mret = 0; goto finish
		:: else -> f = 0; mret = 0; goto help_out
		fi
	}
help_out:
	atomic {
		if
		:: me == GROWER -> goto help
		:: else -> goto begin
		fi
	}
#endif
finish: /* CAS gen 1 -> 2, then punch T0 */
	atomic {
		MAY_DIE;
		if
		:: gen == 1 ->
			p5_finish_only_when_all_moved = ALL_MOVED;
			assert(p5_finish_only_when_all_moved);
			gen = 2;
			printf("P%d finishes the migration\n", me)
		:: else -> goto after_finish
		fi
	}
	atomic { /* fallocate(PUNCH_HOLE) of T0 */
		MAY_DIE;
		punched = true;
		st[0] = 0; key[0] = 0; val[0] = 0; bnd[0] = 0;
		st[1] = 0; key[1] = 0; val[1] = 0; bnd[1] = 0;
#if NOLD > 2
		st[2] = 0; key[2] = 0; val[2] = 0; bnd[2] = 0;
#endif
		printf("P%d punches T0\n", me)
	}
after_finish:
	atomic {
		if
		:: me == GROWER -> goto grower_end
		:: else -> goto begin
		fi
	}

	/* ---- a writer of generation 1: its key's old window ---- */
window:
	atomic {
#ifdef BUG_WRITE_BEFORE_MOVED
		win_done = true;
		goto begin;
#endif
		md = 0;
		ms = HOMEO(k);
		mret = 2;
#ifdef BUG_BOUND_BEFORE_HOME
		mb = BND(bnd[HOMEO(k)]);
#endif
		goto migrate
	}
window_next: /* the bound is read after the home slot is MOVED */
	atomic {
#ifndef BUG_BOUND_BEFORE_HOME
		mb = BND(bnd[HOMEO(k)]);
#endif
		md++;
		if
		:: md >= mb ->
			md = 0; mb = 0; mret = 0; ms = 0;
			win_done = true;
			goto begin
		:: else ->
			ms = (HOMEO(k) + md) % NOLD;
			goto migrate
		fi
	}

	/* ---- migrate_slot(ms): freeze, copy, MOVED ---- */
migrate:
#ifdef FREEZE_BOUND
	atomic { /* fetch_or of the bound's FROZEN bit */
		MAY_DIE;
		if
		:: !BFROZ(bnd[ms]) -> bnd[ms] = bnd[ms] | BF
		:: else
		fi
	}
#endif
mig_load:
	atomic { /* load_acquire of the state */
		mw = st[ms];
		if
		:: WS(mw) == MOVED -> goto mig_done
		:: WS(mw) == MEMBER -> goto mig_member
#ifdef BUG_NO_FREEZE_EMPTY
		:: WS(mw) == EMPTY -> goto mig_done
#endif
		:: else -> goto mig_seal
		fi
	}
mig_seal: /* no key to copy: EMPTY, BUSY, INSERTING, COLLIDED -> MOVED */
	atomic {
		MAY_DIE;
		if
		:: st[ms] == mw ->
			st[ms] = W(MOVED, 0, WV(mw));
			printf("P%d seals old slot %d\n", me, ms);
			goto mig_done
		:: else -> goto mig_load
		fi
	}
mig_member:
	mv = val[ms]; /* load_acquire of the value */
	atomic { /* the state again: mv is this incarnation's */
		if
		:: st[ms] != mw -> mv = 0; goto mig_load
		:: else
		fi;
		if
		:: ISDEAD(mv, WV(mw)) -> goto mig_retire /* half given back */
		:: FROZEN(mv) -> goto mig_copy
		:: else
		fi
	}
#ifndef BUG_COPY_NO_FREEZE
	atomic { /* CAS V -> V|FROZEN: no write lands in this slot any more */
		MAY_DIE;
		if
		:: val[ms] == mv ->
			val[ms] = mv | VFZ;
			mv = mv | VFZ;
			printf("P%d freezes old slot %d\n", me, ms)
		:: else -> mv = 0; goto mig_load
		fi
	}
#endif
mig_copy:
	atomic {
		if
		:: !ISVAL(mv) -> goto mig_retire /* NONE, FRESH: nothing to copy */
		:: else /* the key is stable: the state word is unchanged */
		fi;
		sop = op;
		sk = k;
		op = COPY;
		k = key[ms];
		tb = 1;
		in_copy = true;
		goto lookup_start
	}
copy_done:
	atomic { /* back to the slot being migrated; forget the insert's locals */
		op = sop;
		k = sk;
		sop = 0;
		sk = 0;
		in_copy = false;
		tb = 0;
		h = 0; ri = 0; rw = 0; old = 0; v = 0; pass = 0; d = 0; lb = 0;
		idx = 0; w = 0; busy = 0; helped = false
	}
mig_retire: /* CAS MEMBER -> MOVED: readers go to T1 from now on */
	atomic {
		MAY_DIE;
		if
		:: st[ms] == mw ->
			st[ms] = W(MOVED, 0, WV(mw));
			printf("P%d moved old slot %d\n", me, ms);
			goto mig_done
		:: else -> goto mig_load
		fi
	}
mig_done:
	atomic {
		mw = 0;
		mv = 0;
		if
		:: mret == 1 -> goto help_moved
		:: mret == 2 -> goto window_next
		fi
	}

	/* ---- lookup in table tb ---- */
lookup_start:
	atomic {
		d = 0;
		h = HOMET(k, tb);
		lb = BND(bnd[BASE(tb) + h]);
		rp = rp || tb == 0 && punched;
		if
		:: lb == 0 -> goto missing
		:: else -> goto lookup_next
		fi
	}
lookup_next:
	atomic {
		idx = BASE(tb) + (h + d) % NT(tb);
		rp = rp || tb == 0 && punched;
		if
		:: WS(st[idx]) == MEMBER && key[idx] == k ->
			ri = idx;
			rw = st[idx];
			d = 0; lb = 0; idx = 0;
			goto attempt
#ifndef BUG_READER_IGNORES_MOVED
		:: WS(st[idx]) == MOVED && L0 == 0 ->
			d = 0; lb = 0; idx = 0; goto begin /* T0 is moving */
#endif
		:: else -> d++
		fi;
		if
		:: d >= lb -> goto missing
		:: else -> goto lookup_next
		fi
	}

	/* ---- engine.c attempt() ---- */
attempt:
	atomic {
		old = val[ri];
		rpv = ri < NOLD && punched
	}
	atomic {
		if
		:: st[ri] != rw -> goto relookup
		:: else
		fi;
		p3_read_sees_its_incarnation = VMATCH(old, WV(rw));
		assert(p3_read_sees_its_incarnation);
		if
		:: ISDEAD(old, WV(rw)) -> goto finish_give_back
		:: else
		fi;
		if
		:: op == COPY ->
			if /* only a FRESH slot takes the copy */
			:: ISFRESH(old) -> goto copy_check
			:: else -> goto copy_done
			fi
		:: op == GET -> found = ISVAL(old); goto hit_answer
		:: op == SETNX && ISVAL(old) -> found = true; goto hit_answer
		:: op == DEL && !ISVAL(old) -> found = false; goto hit_answer
		:: else
		fi;
		if
#ifndef BUG_WAIT_FROZEN
		:: FROZEN(old) -> goto begin /* a write: the key is moving */
#else /* waits for whoever froze it to move it */
		:: FROZEN(old) -> old = 0; goto attempt
#endif
		:: !FROZEN(old) && op == DEL -> v = VNONE(WV(rw), 0, 0)
		:: !FROZEN(old) && op != DEL -> v = VVAL(WV(rw))
		fi
	}
	atomic { /* commit(): the linearization point */
		MAY_DIE;
		if
		:: val[ri] == old ->
			val[ri] = v;
			printf("P%d commits slot %d: %d\n", me, ri, ISVAL(v));
			p6_no_write_in_punched_table = !(ri < NOLD && punched);
			assert(p6_no_write_in_punched_table);
			p3_write_lands_in_its_incarnation =
				st[ri] == rw && key[ri] == k;
			assert(p3_write_lands_in_its_incarnation);
			p3_no_write_to_frozen = !FROZEN(old);
			assert(p3_no_write_to_frozen);
			p2_written_copy_is_the_key = ISVAL(old) == has_val[k];
			assert(p2_written_copy_is_the_key);
#if AUX
			aux_new_write_with_no_old_member =
				ri < NOLD || gen != 1 || !OLDM(k);
			assert(aux_new_write_with_no_old_member);
#endif
			if
			:: has_val[k] != ISVAL(v) ->
				has_val[k] = ISVAL(v);
				note_change(k)
			:: else
			fi;
			v = 0;
			goto op_done
		:: else -> old = 0; v = 0; goto attempt
		fi
	}

	/* ---- the copy into T1: FRESH -> V while the old slot is not MOVED ---- */
copy_check:
#ifndef BUG_COPY_NO_SOURCE_CHECK
	atomic {
		if
		:: st[ms] != mw -> old = 0; goto copy_done /* moved by another */
		:: else
		fi
	}
#endif
	atomic {
		MAY_DIE;
		if
		:: val[ri] == old ->
			val[ri] = VVAL(WV(rw));
			printf("P%d copies k%d into slot %d\n", me, k, ri);
			p2_copy_carries_current_value = has_val[k];
			assert(p2_copy_carries_current_value);
			old = 0;
			goto copy_done
		:: else -> old = 0; goto attempt
		fi
	}

finish_give_back:
	atomic {
		if
		:: val[ri] == VNONE(WV(rw), 1, 0) -> w = rw
		:: else -> goto relookup
		fi
	}
	give_back(ri, w);
relookup:
	atomic {
		w = 0; old = 0; ri = 0; rw = 0;
		if
		:: in_copy -> goto copy_again
		:: else -> goto begin
		fi
	}
copy_again: /* the old slot first: if it was moved meanwhile, done */
	atomic {
		if
		:: st[ms] != mw -> goto copy_done
		:: else -> goto lookup_start
		fi
	}

	/* ---- on a miss ---- */
missing:
	atomic {
		d = 0; lb = 0; idx = 0;
		if
		:: op == GET && tb == 0 && L0 == 1 -> tb = 1; goto lookup_start
		:: (op == GET && (tb == 1 || L0 != 1)) || op == DEL ->
			found = false;
			goto read_check
		:: else -> pass = 0
		fi
	}
claim_next:
	atomic {
		idx = BASE(tb) + (HOMET(k, tb) + d) % NT(tb);
		w = st[idx];
		if
		:: WS(w) == EMPTY -> goto claim
		:: WS(w) == COLLIDED -> goto claim_give_back
		:: WS(w) == MEMBER -> goto reclaim
		:: WS(w) == BUSY && pass == 1 -> goto claim_busy
		:: WS(w) == INSERTING && pass == 1 -> goto claim_assist
		:: else -> goto claim_skip /* and MOVED: never claimed */
		fi
	}
claim_busy:
	atomic {
		if
		:: ALIVE(WP(w)) -> goto claim_skip
		:: else
		fi
	}
claim_give_back:
	give_back(idx, w);
	goto claim;
reclaim:
	atomic {
		v = val[idx];
		if
		:: FROZEN(v) || ISVAL(v) || !VMATCH(v, WV(w)) -> goto claim_skip
		:: else
		fi;
		if
		:: ISFRESH(v) && pass == 0 -> goto claim_skip
		:: v == VNONE(WV(w), 1, 0) -> goto reclaim_dead
		:: ISFRESH(v) && pass == 1 -> goto reclaim_fresh
		:: else -> goto reclaim_cas
		fi
	}
reclaim_fresh:
	atomic {
		if
		:: ALIVE(FRESH_PID(v)) -> goto claim_skip
		:: else
		fi
	}
reclaim_cas:
	atomic {
		MAY_DIE;
		if
		:: val[idx] == v -> val[idx] = VNONE(WV(w), 1, 0)
		:: else -> goto claim_skip
		fi
	}
reclaim_dead:
	v = 0;
	give_back(idx, w);
claim:
	atomic {
		MAY_DIE;
		if
		:: w != NOWORD && st[idx] == w ->
			busy = W(BUSY, me, WV(w));
			st[idx] = busy;
			printf("P%d claims slot %d\n", me, idx);
#ifndef BUG_NO_CLAIM_RECHECK
			if /* a zero word may be punched memory: gen again */
			:: w == 0 && tb == 0 && gen == 2 -> goto begin
			:: else
			fi;
#endif
			w = 0;
			goto publish
		:: else
		fi
	}
claim_skip:
	atomic {
		v = 0;
		w = 0;
		d++;
		if
		:: d < NT(tb) -> goto claim_next
		:: d == NT(tb) && pass == 0 -> pass = 1; d = 0; goto claim_next
		:: d == NT(tb) && pass == 1 && helped -> goto relookup_insert
		:: else -> goto enospc
		fi
	}
claim_assist:
	atomic {
		if
		:: st[idx] == w ->
			akey = key[idx];
			ai = idx;
			awi = w;
			atb = tb;
			ahome = HS(akey, tb);
			adi = (idx - BASE(tb) + NT(tb) - HOMET(akey, tb)) % NT(tb);
			from_claim = true;
			helped = true;
			goto assist
		:: else -> goto claim_skip
		fi
	}

	/* ---- publish() ---- */
publish:
	atomic {
		MAY_DIE;
		key[idx] = k;
		val[idx] = VFRESH(WV(busy), me)
	}
	atomic { /* raise_bound(); a frozen bound: give the slot back */
		MAY_DIE;
		if
		:: BFROZ(bnd[HS(k, tb)]) && BND(bnd[HS(k, tb)]) < d + 1 ->
			goto abandon /* FREEZE_BOUND only */
		:: !BFROZ(bnd[HS(k, tb)]) && BND(bnd[HS(k, tb)]) < d + 1 ->
			bnd[HS(k, tb)] = d + 1
		:: else
		fi
	}
	atomic {
		MAY_DIE;
		if
		:: st[idx] == busy ->
			st[idx] = W(INSERTING, 0, WV(busy));
			p6_no_write_in_punched_table = !(idx < NOLD && punched);
			assert(p6_no_write_in_punched_table);
			printf("P%d slot %d -> INSERTING k%d\n", me, idx, k)
		:: else -> goto relookup_insert
		fi
	}
	atomic {
		ai = idx;
		awi = W(INSERTING, 0, WV(busy));
		adi = d;
		akey = k;
		atb = tb;
		ahome = HS(k, tb);
		from_claim = false;
		goto assist
	}
abandon: /* the window is frozen: this key goes to T1 */
	atomic {
		w = busy
	}
	give_back(idx, w);
	goto relookup_insert;
published:
	atomic {
		w = st[idx];
		if
		:: w == W(MEMBER, 0, WV(busy)) ->
			ri = idx;
			rw = w;
			w = 0; busy = 0; pass = 0; d = 0; idx = 0;
			goto attempt
		:: WS(w) == COLLIDED && WV(w) == WV(busy)
		:: else -> goto relookup_insert
		fi
	}
	give_back(idx, w);
relookup_insert:
	atomic {
		helped = false;
		w = 0; busy = 0; pass = 0; idx = 0; d = 0;
		if
		:: in_copy -> goto copy_again
		:: else -> goto begin
		fi
	}

	/* ---- assist_key() in table atb ---- */
assist:
	atomic {
		ad = 0;
		lb = BND(bnd[ahome]);
		if
		:: ad >= lb -> goto promote
		:: else
		fi;
		aj = BASE(atb) + (ahome - BASE(atb) + ad) % NT(atb);
		if
		:: aj == ai -> goto assist_skip
		:: else -> goto assist_read
		fi
	}
assist_skip:
	atomic {
		ad++;
		lb = BND(bnd[ahome]);
		if
		:: ad >= lb -> goto promote
		:: else
		fi;
		aj = BASE(atb) + (ahome - BASE(atb) + ad) % NT(atb);
		if
		:: aj == ai -> goto assist_skip
		:: else
		fi
	}
assist_read:
	atomic {
		awj = st[aj];
		if
#ifndef BUG_DUPCHECK_IGNORES_MOVED
		:: WS(awj) == MOVED -> goto assist_lose /* the window is moving */
#endif
		:: (WS(awj) == INSERTING || WS(awj) == MEMBER) && key[aj] == akey
		:: else -> goto assist_skip
		fi
	}
	if
	:: WS(awj) == MEMBER -> goto assist_lose /* a MEMBER copy wins */
	:: WS(awj) == INSERTING && ad < adi -> /* an earlier one wins */
		cas_state(ai, awi, W(COLLIDED, 0, WV(awi)));
		atomic {
			ai = aj;
			awi = awj;
			adi = ad;
			goto assist
		}
	:: WS(awj) == INSERTING && ad >= adi -> /* kill the later one */
		atomic {
			MAY_DIE;
			if
			:: st[aj] == awj ->
				st[aj] = W(COLLIDED, 0, WV(awj));
				goto assist_skip
			:: else -> goto assist_read /* look again */
			fi
		}
	fi;
promote:
	cas_state(ai, awi, W(MEMBER, 0, WV(awi)));
assist_done:
	atomic {
		ai = 0; awi = 0; adi = 0; ad = 0; aj = 0; awj = 0;
		akey = 0; ahome = 0; atb = 0; lb = 0;
		if
		:: from_claim -> from_claim = false; goto claim_skip
		:: else -> goto published
		fi
	}
assist_lose:
	cas_state(ai, awi, W(COLLIDED, 0, WV(awi)));
	goto assist_done;

enospc:
	printf("P%d %e k%d: -ENOSPC\n", me, op, k);
	atomic {
		if
		:: in_copy -> /* T1's window is full: this slot stays frozen */
			op = sop; k = sk; in_copy = false;
			if
			:: me == GROWER -> goto grower_end
			:: else -> goto op_done
			fi
		:: else -> goto op_done
		fi
	}

/* An answer without a CAS from a slot that holds the key (GET; SETNX that
 * finds a value; DEL that finds none): the state re-check after the value
 * load validated it, a punched slot reads 0, which no MEMBER word is. No
 * load of the life word. */
hit_answer:
	atomic {
		p6_no_answer_from_punched_table = !rpv;
		assert(p6_no_answer_from_punched_table);
		goto answer
	}
/* An answer from a miss: the life word again, was the table we scanned
 * still there? */
read_check:
	atomic {
#ifndef BUG_READER_NO_RECHECK
		if
		:: gen == L0 || L0 == 0 && gen == 1 ->
#else
		if
		:: true ->
#endif
			p6_no_answer_from_punched_table = !rp;
			assert(p6_no_answer_from_punched_table);
			goto answer
		:: else -> goto begin
		fi
	}
answer:
	atomic {
		printf("P%d %e k%d: found %d\n", me, op, k, found);
		p2_no_lost_key = !(g0 && !chg[me] && !found);
		assert(p2_no_lost_key);
		p2_no_phantom_value = !(!g0 && !chg[me] && found);
		assert(p2_no_phantom_value);
		goto op_done
	}

op_done:
progress_op:
	atomic {
		watch[me] = 0; chg[me] = false;
		op = 0; k = 0; h = 0; tb = 0; L0 = 0; ri = 0; rw = 0;
		old = 0; v = 0; pass = 0; d = 0; lb = 0; idx = 0; w = 0;
		busy = 0; ms = 0; mw = 0; mv = 0; mret = 0; md = 0; f = 0;
		from_claim = false; helped = false; did_help = false;
		win_done = false; g0 = false; found = false; rp = false;
		rpv = false;
		goto next_op
	}

	/* ---- the grower: flip gen 0 -> 1 (T1 is zero: EMPTY v0), sweep ---- */
grow:
	atomic {
		MAY_DIE;
		gen = 1;
		printf("P%d starts the migration\n", me)
	}
#if GROWER_SWEEP
	goto help;
#else
	goto grower_end;
#endif
grower_end:
finished:
	done[me] = true;
	goto end_worker;
died:
	skip;
end_worker:
	skip
}

init {
	atomic {
#if INIT == 1
		st[0] = W(MEMBER, 0, 0); key[0] = 0; val[0] = VVAL(0);
		bnd[0] = 1; has_val[0] = true;
#elif INIT == 0
		st[0] = W(MEMBER, 0, 0); key[0] = 0; val[0] = VNONE(0, 0, 0);
		bnd[0] = 1;
#elif INIT == 2
		st[0] = W(EMPTY, 0, 1); bnd[0] = 1;
#else
		st[0] = W(EMPTY, 0, 1); bnd[0] = 2;
		st[1] = W(MEMBER, 0, 0); key[1] = 0; val[1] = VVAL(0);
		has_val[0] = true;
#endif
		run worker(1);
#if NPROC > 1
		run worker(2);
#endif
#if NPROC > 2
		run worker(3);
#endif
		run worker(GROWER)
	}
}

/* ---- invariants ---- */
#define DUP(a, b) (MK(a, key[b]) && WS(st[b]) == MEMBER)
/* an old MEMBER of kk and a new MEMBER of kk with a value: only while the
 * old one is frozen with that value (the copy) */
#define X(o, n, kk)                                                            \
	!(MK(o, kk) && MK(n, kk) && ISVAL(val[n]) &&                           \
	  (!FROZEN(val[o]) || !ISVAL(val[o])))
#define XN(o, kk) (X(o, NOLD, kk) && X(o, NOLD + 1, kk) && XN2(o, kk))
#if NNEW == 2
#define XN2(o, kk) true
#elif NNEW == 3
#define XN2(o, kk) X(o, NOLD + 2, kk)
#else
#define XN2(o, kk) (X(o, NOLD + 2, kk) && X(o, NOLD + 3, kk))
#endif
#if NOLD == 2
#define XALL(kk) (XN(0, kk) && XN(1, kk))
#define P1_OLD	 (!DUP(0, 1))
#define OLDV(kk) (MK(0, kk) && ISVAL(val[0]) || MK(1, kk) && ISVAL(val[1]))
#else
#define XALL(kk) (XN(0, kk) && XN(1, kk) && XN(2, kk))
#define P1_OLD	 (!(DUP(0, 1) || DUP(0, 2) || DUP(1, 2)))
#define OLDV(kk)                                                               \
	(MK(0, kk) && ISVAL(val[0]) || MK(1, kk) && ISVAL(val[1]) ||            \
	 MK(2, kk) && ISVAL(val[2]))
#endif
#define N0 NOLD
#define N1 (NOLD + 1)
#define N2 (NOLD + 2)
#define N3 (NOLD + 3)
#define NV(s, kk) (MK(s, kk) && ISVAL(val[s]))
/* a new slot below its home's bound */
#define NOFF(s) ((s - NOLD + NNEW - HOMEN(key[s])) % NNEW)
#define NLB(s)                                                                 \
	((WS(st[s]) != INSERTING && WS(st[s]) != MEMBER) ||                    \
	 NOFF(s) < BND(bnd[NOLD + HOMEN(key[s])]))
#if NNEW == 2
#define P1_NEW	 (!DUP(N0, N1))
#define NEWV(kk) (NV(N0, kk) || NV(N1, kk))
#define I_NLB	 (NLB(N0) && NLB(N1))
#elif NNEW == 3
#define P1_NEW	 (!(DUP(N0, N1) || DUP(N0, N2) || DUP(N1, N2)))
#define NEWV(kk) (NV(N0, kk) || NV(N1, kk) || NV(N2, kk))
#define I_NLB	 (NLB(N0) && NLB(N1) && NLB(N2))
#else
#define P1_NEW                                                                 \
	(!(DUP(N0, N1) || DUP(N0, N2) || DUP(N0, N3) || DUP(N1, N2) ||         \
	   DUP(N1, N3) || DUP(N2, N3)))
#define NEWV(kk) (NV(N0, kk) || NV(N1, kk) || NV(N2, kk) || NV(N3, kk))
#define I_NLB	 (NLB(N0) && NLB(N1) && NLB(N2) && NLB(N3))
#endif
/* what a lookup sees: an unmoved old MEMBER first, else T1 */
#define VIS(kk) ((OLDM(kk) -> OLDV(kk) : NEWV(kk)) == has_val[kk])
#if NKEY > 1
#define P1X   (XALL(0) && XALL(1))
#define I_VIS (VIS(0) && VIS(1))
#else
#define P1X   XALL(0)
#define I_VIS VIS(0)
#endif
#define P1 (P1_OLD && P1_NEW)
#if AUX
#define INVARIANTS (P1 && P1X && I_VIS && I_NLB)
#else
#define INVARIANTS (P1 && P1X)
#endif

active proctype monitor()
{
end_monitor:
	atomic {
		!INVARIANTS ->
		p1_no_two_members_same_key = P1;
		assert(p1_no_two_members_same_key);
		p1_no_two_live_copies = P1X;
		assert(p1_no_two_live_copies);
		aux_visible_copy_is_the_key = I_VIS;
		assert(aux_visible_copy_is_the_key);
		aux_live_slot_within_bound = I_NLB;
		assert(aux_live_slot_within_bound)
	}
}
