/*
 * defs.pml - the model's parameters, shared-memory encodings, globals and
 * the steps several places use (see slots.pml).
 */

#ifndef NSLOT
#define NSLOT 3
#endif
#ifndef NPROC
#define NPROC 2
#endif
#ifndef NOPS
#define NOPS 2
#endif
#ifndef NKEY
#define NKEY 2
#endif
#ifndef OPMASK
#define OPMASK 15
#endif
#ifndef HOME1
#define HOME1 0
#endif
#ifndef MAXKILL
#define MAXKILL 1
#endif
#ifndef MAXVER
#define MAXVER 7
#endif
#ifndef WRAP
#define WRAP 0
#endif
#ifndef AUX
#define AUX 1
#endif
#ifndef SOLO
#define SOLO 0
#endif
#ifndef RO_GET
#define RO_GET 0
#endif
#ifdef BUG_NO_REEXAMINE
#define RECHECK_CAP 1
#endif
#ifndef RECHECK_CAP
#define RECHECK_CAP 0
#endif

#define NOWORD 255 /* table.c's NO_WORD: state 7 never occurs */

/* State word [version:3 | pid:2 | state:3]; layout.h: [32 | 29 | 3]. */
#define EMPTY	  0
#define BUSY	  1
#define INSERTING 2
#define MEMBER	  3
#define COLLIDED  4
#define W(s, p, v) ((v) * 32 + (p) * 8 + (s))
#define WS(w)	   ((w) & 7)
#define WP(w)	   (((w) >> 3) & 3)
#define WV(w)	   ((w) >> 5)

/*
 * Value word [version:3 | VAL:1 | FRESH:1 | DEAD:1]. NONE carries the slot
 * version and the DEAD and FRESH bits (layout.h's VAL_NONE_WORD and
 * VAL_FRESH_BIT); a value carries the version too (VAL_INT_WORD's tag; a
 * block reference carries a generation never reused, which is at least as
 * exact). What a value says is abstracted to "a value".
 */
#ifndef BUG_NO_VERSION
#define VNONE(v, dead, fresh) ((v) * 8 + (fresh) * 2 + (dead))
#define VVAL(v)		      ((v) * 8 + 4)
#define VMATCH(x, v)	      (((x) >> 3 & 7) == (v))
#else /* the value word forgets its incarnation */
#define VNONE(v, dead, fresh) ((fresh) * 2 + (dead))
#define VVAL(v)		      4
#define VMATCH(x, v)	      1
#endif
#define ISVAL(x)   (((x) >> 2) & 1)
#define ISFRESH(x) (((x) & 6) == 2)
/* FIX_FRESH_PID (a proposed fix): FRESH names its inserter in bits 6-7. */
#ifdef FIX_FRESH_PID
#define VFRESH(v, p) (VNONE(v, 0, 1) + (p) * 64)
#else
#define VFRESH(v, p) VNONE(v, 0, 1)
#endif
#define FRESH_PID(x) ((x) >> 6)

#define HOME(k) ((k) == 0 -> 0 : HOME1)

mtype = { SET, SETNX, DEL, GET };

byte st[NSLOT];	 /* state word */
byte key[NSLOT]; /* the key bytes, abstracted to a key number */
byte val[NSLOT]; /* value word */
byte bnd[NSLOT]; /* probe bound of the keys homed here */

/* Ghost state: not in the segment, only there to state the properties. */
bool has_val[NKEY];	/* the key's value, set at linearization points */
bool killed[NPROC + 1]; /* by pid 1..NPROC */
bool done[NPROC + 1];	/* finished its operations and exited */
byte nkilled;
bool saturated;		/* some slot reached version MAXVER */
byte watch[NPROC + 1];	/* a GET of key watch-1 is in progress */
bool chg[NPROC + 1];	/* ... and that key changed since it started */

/* One flag per assertion, so that a failure names its property. */
bool p1_no_two_members_same_key = true;
bool p2_no_lost_key = true;
bool p2_no_phantom_value = true;
bool p2_written_copy_is_the_key = true;
bool p3_write_lands_in_its_incarnation = true;
bool p3_read_sees_its_incarnation = true;
bool p3_recycled_only_when_dead = true;
bool p4_solo_worker_finds_room = true;
bool aux_member_value_is_the_key = true;
bool aux_value_within_bound = true;
bool aux_live_slot_within_bound = true;

/* shmkv__pid_alive(): neither killed nor exited. */
#define ALIVE(p) (!killed[p] && !done[p])
#if NPROC == 2
#define NALIVE (ALIVE(1) + ALIVE(2))
#else
#define NALIVE (ALIVE(1) + ALIVE(2) + ALIVE(3))
#endif

/*
 * The worker may die here, just before a step that may write shared
 * memory. That is every death that matters: dying right after a read
 * leaves the same shared state as dying right before it.
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

/* A GET watching key kk learns that its presence changed. */
inline note_change(kk)
{
	chg[1] = chg[1] || watch[1] == kk + 1;
	chg[2] = chg[2] || watch[2] == kk + 1;
#if NPROC >= 3
	chg[3] = chg[3] || watch[3] == kk + 1;
#endif
}

/*
 * table.c give_back(): CAS slot i from w to EMPTY(version + 1); w becomes
 * the new word, or NOWORD if the slot changed first. Versions are bounded:
 * at MAXVER the worker stops instead, unless WRAP.
 */
inline give_back(i, w)
{
	atomic {
		MAY_DIE;
		if
		:: st[i] == w && !WRAP && WV(w) == MAXVER ->
			saturated = true;
#ifdef SAT_ASSERT
			assert(!saturated);
#endif
			killed[me] = true;
			goto died
		:: st[i] == w && (WRAP || WV(w) < MAXVER) ->
#ifndef NO_RECYCLE_ASSERT
			p3_recycled_only_when_dead =
				WS(w) != MEMBER || val[i] == VNONE(WV(w), 1, 0);
			assert(p3_recycled_only_when_dead);
#endif
			st[i] = W(EMPTY, 0, (WV(w) + 1) % (MAXVER + 1));
			printf("P%d gives back slot %d -> EMPTY v%d\n", me, i,
			       WV(st[i]));
			w = st[i]
		:: else -> w = NOWORD
		fi
	}
}

/* A full-barrier CAS on a state word whose result nobody looks at. */
inline cas_state(i, expect, new)
{
	atomic {
		MAY_DIE;
		if
		:: st[i] == expect ->
			st[i] = new;
			if /* for trails */
			:: WS(new) == MEMBER ->
				printf("P%d slot %d -> MEMBER v%d\n", me, i, WV(new))
			:: else ->
				printf("P%d slot %d -> COLLIDED v%d\n", me, i, WV(new))
			fi
		:: else
		fi
	}
}

/*
 * Forgets a worker's per-command locals, so that states which differ only
 * in values nobody reads again are one state.
 */
inline forget_assist()
{
	ai = 0; awi = 0; adi = 0; ad = 0; aj = 0; awj = 0;
	akey = 0; ahome = 0; aretries = 0; lb = 0
}

inline forget()
{
	forget_assist();
	watch[me] = 0; chg[me] = false;
	op = 0; k = 0; h = 0; ri = 0; rw = 0; old = 0; nv = 0;
	pass = 0; d = 0; idx = 0; w = 0; busy = 0; v = 0;
	from_claim = false; helped = false;
	g0 = false; found = false; solo = false
}
