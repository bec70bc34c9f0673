package grant

import (
	"fmt"
	"slices"
	"strings"
)

// level is the shape of a Verdict, in lattice order.
type level uint8

const (
	levelDeny level = iota
	levelOnly
	levelAllow
)

// Verdict is what the grants say about one program or one access:
// Deny < Only(args) < Allow. Only(args) admits a program when its first
// argument is one of args; two Onlys meet to the intersection of their
// arguments. Only() with no arguments is still above Deny: it is "admitted
// with no first argument", which CheckExec refuses for every argv, but it is
// not an authored deny and stacks as an Only (the law needs the difference).
//
// The zero Verdict is Deny. Verdicts are values; compare them with Equal.
type Verdict struct {
	lvl  level
	args []string // sorted, without duplicates; only for levelOnly
}

// The two ends of the lattice.
var (
	Deny  = Verdict{}
	Allow = Verdict{lvl: levelAllow}
)

// Only returns the verdict that admits a program with one of args as its
// first argument.
func Only(args ...string) Verdict {
	a := slices.Clone(args)
	slices.Sort(a)
	return Verdict{lvl: levelOnly, args: slices.Compact(a)}
}

// IsDeny reports whether v is Deny.
func (v Verdict) IsDeny() bool { return v.lvl == levelDeny }

// IsAllow reports whether v is Allow (not Only).
func (v Verdict) IsAllow() bool { return v.lvl == levelAllow }

// IsOnly reports whether v is an Only, and returns its arguments.
func (v Verdict) IsOnly() ([]string, bool) {
	if v.lvl != levelOnly {
		return nil, false
	}
	return slices.Clone(v.args), true
}

// Admits reports whether v lets a program run with argv (argv[0] is the
// program's spelling, argv[1] the first argument).
func (v Verdict) Admits(argv []string) bool {
	switch v.lvl {
	case levelAllow:
		return true
	case levelOnly:
		if len(argv) < 2 {
			return false
		}
		_, ok := slices.BinarySearch(v.args, argv[1])
		return ok
	}
	return false
}

// Meet is the greatest lower bound: Deny absorbs, Allow is the identity,
// two Onlys intersect.
func (v Verdict) Meet(w Verdict) Verdict {
	switch {
	case v.lvl == levelDeny || w.lvl == levelDeny:
		return Deny
	case v.lvl == levelAllow:
		return w
	case w.lvl == levelAllow:
		return v
	}
	var both []string
	for _, a := range v.args {
		if _, ok := slices.BinarySearch(w.args, a); ok {
			both = append(both, a)
		}
	}
	return Verdict{lvl: levelOnly, args: both}
}

// Equal reports whether v and w are the same verdict.
func (v Verdict) Equal(w Verdict) bool {
	return v.lvl == w.lvl && slices.Equal(v.args, w.args)
}

// String renders "deny", "allow" or `only [ci test]`.
func (v Verdict) String() string {
	switch v.lvl {
	case levelAllow:
		return "allow"
	case levelOnly:
		return "only [" + strings.Join(v.args, " ") + "]"
	}
	return "deny"
}

// Rank orders the rules that speak to one program: Dir(depth) < Carrier <
// Exact < Veto, and a deeper directory outranks a shallower one. Among the
// rules that speak, the highest rank decides and equal ranks meet.
type Rank uint32

// The ranks above every directory.
const (
	RankCarrier Rank = 1<<16 + iota
	RankExact
	RankVeto
)

// DirRank is the rank of a directory rule whose key has depth components
// ("/" is 0, "/usr/bin" is 2).
func DirRank(depth int) Rank {
	if depth >= int(RankCarrier) {
		depth = int(RankCarrier) - 1
	}
	return Rank(depth)
}

// IsDir reports whether r is a directory rank, and its depth.
func (r Rank) IsDir() (depth int, ok bool) {
	if r < RankCarrier {
		return int(r), true
	}
	return 0, false
}

// String renders "dir(3)", "carrier", "exact" or "veto".
func (r Rank) String() string {
	switch r {
	case RankCarrier:
		return "carrier"
	case RankExact:
		return "exact"
	case RankVeto:
		return "veto"
	}
	if r > RankVeto {
		return fmt.Sprintf("rank(%d)", uint32(r))
	}
	return fmt.Sprintf("dir(%d)", uint32(r))
}
