package grant

import "slices"

// Stack is the table of a stack of layers: the meet of their tables, in
// order (the meet is associative and commutative, so the order only shows in
// the order of sources). A host policy is just another layer, and stacking
// only ever restricts. Stack() with no table is the empty table, which
// denies everything.
func Stack(tables ...*ExecTable) *ExecTable {
	if len(tables) == 0 {
		t := newExecTable()
		t.seal()
		return t
	}
	t := tables[0]
	for _, u := range tables[1:] {
		t = Meet(t, u)
	}
	return t
}

// Meet is the restrict-is-meet of two tables (spec 000 "Allows meet, denies
// join"). Over the union of the keys of each of files, tools and dirs,
//
//	M[k] = T_a(k) ∧ T_b(k), kept iff it is not Deny, or a[k] or b[k] is itself a Deny,
//
// where T is the verdict for a file or tool and what the dirs alone say for a
// dir. A key met to Deny that no layer denied is left to the default deny,
// which is absence: written as a deny it would hold every other spelling of
// the name. Vetoes union. So for every program p,
// verdict(Meet(a, b), p) == verdict(a, p) ∧ verdict(b, p).
func Meet(a, b *ExecTable) *ExecTable {
	m := newExecTable()
	meetKeys(m.files, a.files, b.files, func(t *ExecTable, k string) Decision {
		return t.Decide(FileProgram(k, k))
	}, a, b)
	meetKeys(m.tools, a.tools, b.tools, func(t *ExecTable, k string) Decision {
		return t.Decide(ToolProgram(k))
	}, a, b)
	meetKeys(m.dirs, a.dirs, b.dirs, func(t *ExecTable, k string) Decision {
		return Decision{Verdict: t.dirVerdict(k)}
	}, a, b)
	for _, side := range []*ExecTable{a, b} {
		for _, r := range side.vetoes {
			m.meetInsert(m.vetoes, RuleVeto, r.target, RankVeto, Deny, r.sources...)
		}
	}
	m.seal()
	return m
}

// meetKeys writes M[k] for one kind of key (see Meet). judge gives a side's
// verdict at k, with the deciding rule's sources for explanation.
func meetKeys(out, ra, rb map[string]*rule, judge func(*ExecTable, string) Decision, a, b *ExecTable) {
	keys := make([]string, 0, len(ra)+len(rb))
	for k := range ra {
		keys = append(keys, k)
	}
	for k := range rb {
		if ra[k] == nil {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		x, y := ra[k], rb[k]
		da, db := judge(a, k), judge(b, k)
		v := da.Verdict.Meet(db.Verdict)
		authoredA, authoredB := x != nil && x.verdict.IsDeny(), y != nil && y.verdict.IsDeny()
		if v.IsDeny() && !authoredA && !authoredB {
			continue
		}
		var like *rule
		var srcs []Source
		for _, side := range []struct {
			r        *rule
			d        Decision
			authored bool
		}{{x, da, authoredA}, {y, db, authoredB}} {
			switch {
			case v.IsDeny() && !side.authored:
			case side.r != nil:
				like = side.r
				srcs = append(srcs, side.r.sources...)
			default:
				srcs = append(srcs, side.d.Rule.Sources...)
			}
		}
		r := &rule{kind: like.kind, target: like.target, folded: like.folded, rank: like.rank, verdict: v, sources: slices.Clip(srcs)}
		if x != nil && y != nil {
			r.rank = max(x.rank, y.rank)
		}
		out[k] = r
	}
}
