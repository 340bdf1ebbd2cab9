/*
 * monitor.pml - the invariants, checked in every reachable state by a
 * process whose one statement can only run when one of them is false.
 */

#define MK(s, kk) (WS(st[s]) == MEMBER && key[s] == kk)
#define DUP(a, b) (MK(a, key[b]) && WS(st[b]) == MEMBER)
/* a MEMBER slot's value word says whether its key has a value */
#define MV(s) (WS(st[s]) != MEMBER || ISVAL(val[s]) == has_val[key[s]])
/* key kk is at offset dd of its window, with a value, below the bound */
#define AT(kk, dd) ((HOME(kk) + dd) % NSLOT)
#define IB(kk, dd) (dd < bnd[HOME(kk)] && MK(AT(kk, dd), kk) && ISVAL(val[AT(kk, dd)]))
/* an INSERTING or MEMBER slot lies below its home's probe bound */
#define OFF(s) ((s + NSLOT - HOME(key[s])) % NSLOT)
#define LB(s) ((WS(st[s]) != INSERTING && WS(st[s]) != MEMBER) || OFF(s) < bnd[HOME(key[s])])
#if NSLOT == 2
#define P1	 (!DUP(0, 1))
#define I_MV	 (MV(0) && MV(1))
#define I_IB(kk) (!has_val[kk] || IB(kk, 0) || IB(kk, 1))
#define I_LB	 (LB(0) && LB(1))
#elif NSLOT == 3
#define P1	 (!(DUP(0, 1) || DUP(0, 2) || DUP(1, 2)))
#define I_MV	 (MV(0) && MV(1) && MV(2))
#define I_IB(kk) (!has_val[kk] || IB(kk, 0) || IB(kk, 1) || IB(kk, 2))
#define I_LB	 (LB(0) && LB(1) && LB(2))
#else
#define P1	 (!(DUP(0, 1) || DUP(0, 2) || DUP(0, 3) || DUP(1, 2) || DUP(1, 3) || DUP(2, 3)))
#define I_MV	 (MV(0) && MV(1) && MV(2) && MV(3))
#define I_IB(kk) (!has_val[kk] || IB(kk, 0) || IB(kk, 1) || IB(kk, 2) || IB(kk, 3))
#define I_LB	 (LB(0) && LB(1) && LB(2) && LB(3))
#endif
#if NKEY > 1
#define I_IBALL (I_IB(0) && I_IB(1))
#else
#define I_IBALL I_IB(0)
#endif
#if AUX
#define INVARIANTS (P1 && I_MV && I_IBALL && I_LB)
#else
#define INVARIANTS P1
#endif

active proctype monitor()
{
end_monitor:
	atomic {
		!INVARIANTS ->
		p1_no_two_members_same_key = P1;
		assert(p1_no_two_members_same_key);
		aux_member_value_is_the_key = I_MV;
		assert(aux_member_value_is_the_key);
		aux_value_within_bound = I_IBALL;
		assert(aux_value_within_bound);
		aux_live_slot_within_bound = I_LB;
		assert(aux_live_slot_within_bound)
	}
}
