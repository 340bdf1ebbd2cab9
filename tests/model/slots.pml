/*
 * slots.pml - a Promela model of shmkv's slot protocol, checked with spin
 * (tests/model/run.sh; README.md there says what is abstracted and why).
 * defs.pml holds the encodings, globals and shared steps, monitor.pml the
 * invariants.
 *
 * Modelled step for step: src/table.c (lookup; insert = claim + publish +
 * the two-phase duplicate check; recycling deleted, collided and
 * dead-claimed slots; helping a stuck insert) and the value-word part of
 * src/engine.c (attempt: load the value, re-check the state word, decide,
 * CAS). Each load or CAS of a shared word is one atomic step, with the
 * local computation after it folded in; a worker may die before any step
 * that writes (MAY_DIE), which covers a death between any two steps.
 *
 * Parameters (spin -DNAME=value):
 *   NSLOT 2..4 slots, probe limit = NSLOT   NPROC 2..3 workers
 *   NOPS operations per worker              NKEY 1..2 keys
 *   OPMASK commands to choose from: 1 SET, 2 SETNX, 4 DEL, 8 GET
 *   HOME1 home slot of key 1 (key 0's is 0) MAXKILL deaths
 *   MAXVER largest slot version (<= 7); at it a give-back stops the worker
 *   WRAP versions wrap modulo MAXVER+1 instead (for the liveness check)
 *   AUX 1: also check the supporting invariants
 *   SOLO 1: a worker running alone never gets -ENOSPC
 *   RO_GET 1: GETs run on a read-only handle (DEAD reads as absent)
 *   RECHECK_CAP 0: after a failed CAS the duplicate check looks at the slot
 *     again, always; n: only n-1 times per scan, as table.c's retries cap
 * Deliberately broken variants that spin must reject: BUG_NO_DUPCHECK,
 * BUG_BOUND_AFTER_CHECK, BUG_LATE_BOUND, BUG_NO_DEAD_STEP, BUG_NO_VERSION,
 * BUG_NO_REEXAMINE, and BUG_NO_FINISH (the code before commit dedc179:
 * a command meeting a half given back slot probed again instead of
 * finishing the give-back).
 * Proposed fixes, checked the same way: FIX_ENOSPC (an insert whose second
 * pass decided a stuck insert looks the key up again instead of failing),
 * FIX_FRESH_PID (FRESH names its inserter; the second pass recycles a
 * FRESH slot only when that inserter is dead), FIX_CAP (the duplicate
 * check gives up with -EAGAIN at its retries cap instead of moving on).
 */

#include "defs.pml"

active [NPROC] proctype worker()
{
	byte me = _pid + 1;
	byte nops, k, h;
	mtype op;
	byte ri, rw;			   /* slot ref: index, MEMBER word */
	byte old, nv;			   /* attempt(): value words */
	byte pass, d, lb, idx, w, busy, v; /* lookup, insert */
	byte ai, awi, adi, ad, aj, awj, akey, ahome, aretries; /* assist */
	bool from_claim; /* the assist returns to the insert loop */
	bool helped;	 /* FIX_ENOSPC: the second pass decided an insert */
	bool g0, found, solo; /* ghosts */

	/*
	 * Each atomic block is one load or CAS of a shared word and the
	 * local computation after it; a goto out of a block ends the step,
	 * so another worker may run at every label.
	 */
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
		h = HOME(k);
		printf("P%d %e k%d\n", me, op, k);
#if SOLO
		solo = NALIVE == 1;
#endif
		if
		:: op == GET -> /* its invocation, for the GET check */
			g0 = has_val[k];
			watch[me] = k + 1;
			chg[me] = false
		:: else
		fi;
		/* engine.c find() -> shmkv__lookup(): probe_bound() */
		d = 0;
		lb = bnd[h];
		if
		:: lb == 0 -> goto missing
		:: else -> goto lookup_next
		fi
	}
lookup_next:
	/* slot_holds(MEMBER): comparing the key between two reads of an
	 * unchanged state word is one atomic read here (README.md). */
	atomic {
		idx = (h + d) % NSLOT;
		if
		:: WS(st[idx]) == MEMBER && key[idx] == k ->
			ri = idx;
			rw = st[idx];
			d = 0;
			lb = 0;
			idx = 0;
			goto attempt
		:: else -> d++
		fi;
		if
		:: d >= lb -> goto missing
		:: else -> goto lookup_next
		fi
	}

	/* ---- engine.c attempt() ---- */
attempt:
	old = val[ri]; /* load_acquire */
	atomic {
		if
		:: st[ri] != rw -> goto relookup /* slot_still() failed */
		:: else
		fi;
		/* read_current(): the state word is unchanged, so the value
		 * must be this incarnation's (else -EBADMSG) */
		p3_read_sees_its_incarnation = VMATCH(old, WV(rw));
		assert(p3_read_sees_its_incarnation);
		if /* DEAD: the slot is half given back */
		:: old == VNONE(WV(rw), 1, 0) && op == GET && RO_GET ->
			found = false; /* a read-only handle: absent */
			goto op_done
		:: old == VNONE(WV(rw), 1, 0) && !(op == GET && RO_GET) ->
			printf("P%d finds slot %d half given back\n", me, ri);
			goto finish_give_back
		:: else
		fi;
		if /* decide() */
		:: op == GET ->
			found = ISVAL(old);
			goto op_done
		:: op == SETNX && ISVAL(old) -> goto op_done
		:: op == DEL && !ISVAL(old) -> goto op_done
		:: op == DEL && ISVAL(old) -> nv = VNONE(WV(rw), 0, 0)
		:: op == SET || op == SETNX && !ISVAL(old) ->
			nv = VVAL(WV(rw))
		fi
	}
	atomic { /* commit(): the linearization point */
		MAY_DIE;
		if
		:: val[ri] == old ->
			val[ri] = nv;
			printf("P%d commits slot %d: value %d -> %d\n", me, ri,
			       ISVAL(old), ISVAL(nv));
			p3_write_lands_in_its_incarnation =
				st[ri] == rw && key[ri] == k;
			assert(p3_write_lands_in_its_incarnation);
			p2_written_copy_is_the_key = ISVAL(old) == has_val[k];
			assert(p2_written_copy_is_the_key);
			if
			:: has_val[k] != ISVAL(nv) ->
				has_val[k] = ISVAL(nv);
				note_change(k)
			:: else
			fi;
			goto op_done
		:: else -> /* lost the race: read the word again */
			old = 0;
			nv = 0;
			goto attempt
		fi
	}
finish_give_back: /* attempt() finishes it for whoever started it */
#ifdef BUG_NO_FINISH
	goto relookup;
#endif
	atomic { /* shmkv__slot_reclaim(MEMBER): load_acquire of the value */
		if
		:: val[ri] == VNONE(WV(rw), 1, 0) -> w = rw
		:: else -> goto relookup
		fi
	}
	give_back(ri, w);
relookup:
	atomic { /* RELOOKUP: find() again, probe_bound() */
		w = 0;
		old = 0;
		ri = 0;
		rw = 0;
		d = 0;
		lb = bnd[h];
		if
		:: lb == 0 -> goto missing
		:: else -> goto lookup_next
		fi
	}

	/* ---- engine.c on_missing() -> table.c shmkv__insert() ---- */
missing:
	atomic {
		d = 0;
		lb = 0;
		idx = 0;
		if
		:: op == GET ->
			found = false;
			goto op_done
		:: op == DEL -> goto op_done
		:: else -> pass = 0
		fi
	}
claim_next:
	atomic { /* try_claim(): load_acquire of the state */
		idx = (h + d) % NSLOT;
		w = st[idx];
		if
		:: WS(w) == EMPTY -> goto claim
		:: WS(w) == COLLIDED -> goto claim_give_back
		:: WS(w) == MEMBER -> goto reclaim
		:: WS(w) == BUSY && pass == 1 -> goto claim_busy
		:: WS(w) == INSERTING && pass == 1 -> goto claim_assist
		:: else -> goto claim_skip
		fi
	}
claim_busy:
	atomic { /* kill(pid, 0) */
		if
		:: ALIVE(WP(w)) -> goto claim_skip
		:: else
		fi
	}
claim_give_back:
	give_back(idx, w);
	goto claim;
reclaim: /* reclaim_member() */
	atomic { /* load_acquire of the value */
		v = val[idx];
		if
		:: ISVAL(v) || !VMATCH(v, WV(w)) || ISFRESH(v) && pass == 0 ->
			goto claim_skip
		:: v == VNONE(WV(w), 1, 0) -> goto reclaim_dead
#ifdef FIX_FRESH_PID
		:: ISFRESH(v) && pass == 1 -> goto reclaim_fresh
#endif
		:: else -> goto reclaim_cas
		fi
	}
#ifdef FIX_FRESH_PID
reclaim_fresh:
	atomic { /* kill(pid, 0) of the inserter: only a dead one's */
		if
		:: ALIVE(FRESH_PID(v)) -> goto claim_skip
		:: else
		fi
	}
#endif
reclaim_cas:
#ifndef BUG_NO_DEAD_STEP
	atomic { /* NONE -> DEAD: no pending write can land any more */
		MAY_DIE;
		if
		:: val[idx] == v ->
			val[idx] = VNONE(WV(w), 1, 0);
			printf("P%d recycles slot %d: value DEAD\n", me, idx)
		:: else -> goto claim_skip
		fi
	}
#endif
reclaim_dead:
	v = 0;
	give_back(idx, w);
claim:
	atomic { /* the claim CAS */
		MAY_DIE;
		if
		:: w != NOWORD && st[idx] == w ->
			busy = W(BUSY, me, WV(w));
			st[idx] = busy;
			printf("P%d claims slot %d v%d\n", me, idx, WV(w));
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
		:: d < NSLOT -> goto claim_next
		:: d == NSLOT && pass == 0 ->
			pass = 1;
			d = 0;
			goto claim_next
		:: d == NSLOT && pass == 1 && helped -> goto relookup_insert
		:: else -> goto enospc
		fi
	}
claim_assist:
	atomic { /* shmkv__assist(): copy the key, re-check the state */
		if
		:: st[idx] == w ->
			akey = key[idx];
			ai = idx;
			awi = w;
			ahome = HOME(akey);
			adi = (idx + NSLOT - ahome) % NSLOT;
			from_claim = true;
#ifdef FIX_ENOSPC
			helped = true;
#endif
			printf("P%d helps the insert in slot %d\n", me, idx);
			goto assist
		:: else -> goto claim_skip
		fi
	}

	/* ---- publish() ---- */
publish:
	atomic { /* relaxed stores into our BUSY slot */
		MAY_DIE;
		key[idx] = k;
		val[idx] = VFRESH(WV(busy), me)
	}
#if !defined(BUG_LATE_BOUND) && !defined(BUG_BOUND_AFTER_CHECK)
	atomic { /* raise_bound(): a CAS loop up to max(bound, d + 1) */
		MAY_DIE;
		if
		:: bnd[h] < d + 1 -> bnd[h] = d + 1
		:: else
		fi
	}
#endif
	atomic {
		MAY_DIE;
		if
		:: st[idx] == busy ->
			st[idx] = W(INSERTING, 0, WV(busy));
			printf("P%d slot %d -> INSERTING k%d\n", me, idx, k)
		:: else -> goto relookup_insert /* our claim was recycled */
		fi
	}
#ifdef BUG_LATE_BOUND
	atomic {
		MAY_DIE;
		if
		:: bnd[h] < d + 1 -> bnd[h] = d + 1
		:: else
		fi
	}
#endif
	atomic {
		ai = idx;
		awi = W(INSERTING, 0, WV(busy));
		adi = d;
		akey = k;
		ahome = h;
		from_claim = false;
		goto assist
	}
published:
#ifdef BUG_BOUND_AFTER_CHECK
	atomic {
		MAY_DIE;
		if
		:: bnd[h] < d + 1 -> bnd[h] = d + 1
		:: else
		fi
	}
#endif
	atomic { /* load_acquire: the decision */
		w = st[idx];
		if
		:: w == W(MEMBER, 0, WV(busy)) ->
			ri = idx;
			rw = w;
			w = 0;
			busy = 0;
			pass = 0;
			d = 0;
			idx = 0;
			goto attempt
		:: WS(w) == COLLIDED && WV(w) == WV(busy)
		:: else -> goto relookup_insert
		fi
	}
	give_back(idx, w);
relookup_insert:
	atomic { /* RELOOKUP */
		helped = false;
		w = 0;
		busy = 0;
		pass = 0;
		idx = 0;
		d = 0;
		lb = bnd[h];
		if
		:: lb == 0 -> goto missing
		:: else -> goto lookup_next
		fi
	}

	/* ---- assist_key(): the duplicate check of slot ai ---- */
assist:
	atomic { /* the loop condition reads probe_bound() every round */
		ad = 0;
		aretries = 0;
#ifdef BUG_NO_DUPCHECK
		goto promote;
#endif
		lb = bnd[ahome];
		if
		:: ad >= lb -> goto promote
		:: else
		fi;
		aj = (ahome + ad) % NSLOT;
		if
		:: aj == ai -> goto assist_skip
		:: else -> goto assist_read
		fi
	}
assist_skip:
	atomic { /* d++, and the loop condition again */
		ad++;
		lb = bnd[ahome];
		if
		:: ad >= lb -> goto promote
		:: else
		fi;
		aj = (ahome + ad) % NSLOT;
		if
		:: aj == ai -> goto assist_skip
		:: else
		fi
	}
assist_read:
	atomic { /* slot_holds(INSERTING | MEMBER) */
		awj = st[aj];
		if
		:: (WS(awj) == INSERTING || WS(awj) == MEMBER) &&
		   key[aj] == akey
		:: else -> goto assist_skip
		fi
	}
	if
	:: WS(awj) == MEMBER -> /* a MEMBER copy wins outright */
		cas_state(ai, awi, W(COLLIDED, 0, WV(awi)));
		goto assist_done
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
				printf("P%d slot %d -> COLLIDED (a later insert)\n",
				       me, aj);
				goto assist_skip
			:: else -> /* it changed (perhaps to MEMBER) */
				printf("P%d slot %d changed under the CAS\n", me, aj);
				aretries++;
				if
				:: RECHECK_CAP == 0 || aretries < RECHECK_CAP ->
					goto assist_read /* look again */
#ifdef FIX_CAP
				:: else -> goto assist_give_up
#else
				:: else -> goto assist_skip /* retries cap */
#endif
				fi
			fi
		}
	fi;
promote:
	cas_state(ai, awi, W(MEMBER, 0, WV(awi)));
assist_done:
	atomic {
		forget_assist();
		if
		:: from_claim ->
			from_claim = false;
			goto claim_skip
		:: else -> goto published
		fi
	}

#ifdef FIX_CAP
assist_give_up: /* -EAGAIN: slot ai stays INSERTING for a later helper */
	atomic {
		forget_assist();
		if
		:: from_claim ->
			from_claim = false;
			goto claim_skip /* shmkv__assist() ignores it */
		:: else ->
			printf("P%d %e k%d: -EAGAIN\n", me, op, k);
			goto op_done
		fi
	}
#endif
enospc:
	printf("P%d %e k%d: -ENOSPC\n", me, op, k);
#if SOLO
	p4_solo_worker_finds_room = !solo;
	assert(p4_solo_worker_finds_room);
#endif
op_done:
progress_op:
	atomic {
		if
		:: op == GET ->
			printf("P%d GET k%d: found %d\n", me, k, found);
			p2_no_lost_key = !(g0 && !chg[me] && !found);
			assert(p2_no_lost_key);
			p2_no_phantom_value = !(!g0 && !chg[me] && found);
			assert(p2_no_phantom_value)
		:: else
		fi;
		forget();
		goto next_op
	}
finished:
	done[me] = true;
	goto end_worker;
died:
	atomic { /* its locals are gone */
		forget();
		nops = 0
	}
end_worker:
	skip
}

#include "monitor.pml"
