package grant

import (
	"cmp"
	"slices"
)

// KernelRule is one rule of the kernel projection: an exec filter a
// last-match-wins kernel layer (Seatbelt's process-exec, a launcher's
// exec allowlist) applies in order.
type KernelRule struct {
	Kind  RuleKind // RuleDir (the path and beneath), RuleFile (the path), or RuleVeto (a last path element)
	Path  string   // the real path; for a veto, the command name as written
	Allow bool     // the rule's final verdict is not Deny (the kernel cannot see argv: Only is an allow)
	// Fold says the rule matches under every spelling (caseless,
	// normalisation-insensitive), as a deny does; otherwise it matches the
	// stored bytes only.
	Fold bool
	Rank Rank
}

// Kernel renders the table as an ordered list for a last-match-wins kernel:
// the same rules, each file once at its final verdict (the carrier counted),
// sorted by rank ascending with denies after allows within a rank, so that
// the last rule matching a program gives Decide's answer. Tools are absent:
// the kernel sees only their carrier.
//
// A veto matches when the last element of the path the program was executed
// by, or of its real path, folds to the veto's key.
func (t *ExecTable) Kernel() []KernelRule {
	out := make([]KernelRule, 0, len(t.scan))
	for _, r := range t.scan {
		kr := KernelRule{Kind: r.kind, Path: r.target, Rank: r.rank, Fold: r.verdict.IsDeny()}
		switch r.kind {
		case RuleFile:
			kr.Allow = !t.Verdict(FileProgram(r.target, r.target)).IsDeny()
		case RuleDir:
			kr.Allow = !r.verdict.IsDeny()
		case RuleVeto:
			kr.Allow = false
		}
		out = append(out, kr)
	}
	slices.SortStableFunc(out, func(a, b KernelRule) int {
		return cmp.Or(cmp.Compare(a.Rank, b.Rank), cmpBool(!a.Allow, !b.Allow))
	})
	return out
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
