package grant

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// The universe the property tests range over: directories and files whose
// names differ by ASCII case, Unicode case (É/é, the Kelvin sign K/k) and
// normalisation (é as one code point, NFC, or as e + U+0301, NFD), created
// on disk so bare keys find them on PATH.
type universe struct {
	root     string
	dirs     []string  // real directories
	files    []string  // real executable files
	names    []string  // bare names
	tools    Tools     // bundled tools (tool, fmt) with their carrier
	programs []Program // every program a verdict is checked for
}

const (
	eNFC   = "\u00e9"  // é
	eNFD   = "e\u0301" // é, decomposed
	bigNFC = "\u00c9"  // É
	kelvin = "\u212a"  // K, folds to k
)

func newUniverse(t *testing.T) *universe {
	t.Helper()
	u := &universe{root: realTemp(t)}
	caseSensitive(t, u.root)
	r := u.root + "/u"
	for _, d := range []string{"", "/a", "/a/b", "/a/B", "/a/c", "/a/" + eNFC, "/a/" + eNFD, "/a/" + bigNFC, "/a/b/d", "/a/B/d", "/a/k", "/a/" + kelvin} {
		u.dirs = append(u.dirs, r+d)
	}
	for _, d := range u.dirs[1:] {
		for _, f := range []string{"x", "X", "tool"} {
			u.files = append(u.files, mkexec(t, d, f))
		}
	}
	u.tools = Tools{Carrier: mkexec(t, r, "carrier"), Names: []string{"tool", "fmt"}}
	u.files = append(u.files, u.tools.Carrier)
	u.names = []string{"x", "X", "tool", "Tool", "fmt", "git"}
	t.Setenv("PATH", r+"/a/b:"+r+"/a/c")

	for _, f := range u.files {
		u.programs = append(u.programs, FileProgram(f, f))
	}
	// Spellings that differ from the real path: a link named Tool, a
	// link named git.
	u.programs = append(u.programs,
		FileProgram(r+"/links/Tool", r+"/a/c/x"),
		FileProgram(r+"/links/git", r+"/a/B/d/X"))
	for _, n := range []string{"tool", "fmt", "Tool", "git"} {
		u.programs = append(u.programs, ToolProgram(n))
	}
	return u
}

// layer draws a layer of up to 8 keys from the universe.
func (u *universe) layer(rt *rapid.T, name string) Layer {
	l := Layer{Name: name}
	n := rapid.IntRange(0, 8).Draw(rt, name+".n")
	for i := range n {
		pos := Pos{File: name + ".yaml", Line: i + 1, Col: 1}
		var key string
		isDir := false
		switch rapid.IntRange(0, 2).Draw(rt, name+".kind") {
		case 0:
			key, isDir = rapid.SampledFrom(u.dirs).Draw(rt, name+".dir")+"/", true
		case 1:
			key = rapid.SampledFrom(u.files).Draw(rt, name+".file")
		case 2:
			key = rapid.SampledFrom(u.names).Draw(rt, name+".name")
		}
		s := Spec{Text: key, Pos: pos}
		max := 4
		if isDir {
			max = 1
		}
		switch rapid.IntRange(0, max).Draw(rt, name+".verdict") {
		case 0:
			l.Exec.Allow = append(l.Exec.Allow, s)
		case 1:
			l.Exec.Deny = append(l.Exec.Deny, s)
		case 2:
			l.Exec.Only = append(l.Exec.Only, OnlySpec{Key: s, Args: []string{"test"}})
		case 3:
			l.Exec.Only = append(l.Exec.Only, OnlySpec{Key: s, Args: []string{"ci"}})
		case 4:
			l.Exec.Only = append(l.Exec.Only, OnlySpec{Key: s, Args: []string{"ci", "test"}})
		}
	}
	return l
}

func (u *universe) table(rt *rapid.T, name string) *ExecTable {
	l := u.layer(rt, name)
	g, err := Decode(l)
	if err != nil {
		rt.Fatalf("decode: %v", err)
	}
	return CompileExec(g, u.tools)
}

// lawViolation checks verdict(meet(a, b), p) == verdict(a, p) ∧ verdict(b, p)
// for every program, and describes the first that breaks it.
func lawViolation(meet func(a, b *ExecTable) *ExecTable, a, b *ExecTable, programs []Program) string {
	m := meet(a, b)
	for _, p := range programs {
		want := a.Verdict(p).Meet(b.Verdict(p))
		if got := m.Verdict(p); !got.Equal(want) {
			return fmt.Sprintf("%v: meet says %v (%v), the layers %v ∧ %v", p, got, m.Decide(p), a.Verdict(p), b.Verdict(p))
		}
	}
	return ""
}

// sameVerdicts reports the first program two tables disagree on.
func sameVerdicts(a, b *ExecTable, programs []Program) string {
	for _, p := range programs {
		if va, vb := a.Verdict(p), b.Verdict(p); !va.Equal(vb) {
			return fmt.Sprintf("%v: %v vs %v", p, va, vb)
		}
	}
	return ""
}

// TestLawMeetIsPointwiseVerdictMeet is property (a): for all programs,
// verdict(a ∧ b, p) == verdict(a, p) ∧ verdict(b, p).
func TestLawMeetIsPointwiseVerdictMeet(t *testing.T) {
	u := newUniverse(t)
	rapid.Check(t, func(rt *rapid.T) {
		a, b := u.table(rt, "a"), u.table(rt, "b")
		if v := lawViolation(Meet, a, b, u.programs); v != "" {
			rt.Fatal(v)
		}
	})
}

// TestLawMeetLattice is property (b): the meet is associative, commutative
// and idempotent (as verdicts over the universe; commutative also as a
// table, rule for rule).
func TestLawMeetLattice(t *testing.T) {
	u := newUniverse(t)
	rapid.Check(t, func(rt *rapid.T) {
		a, b, c := u.table(rt, "a"), u.table(rt, "b"), u.table(rt, "c")
		if d := sameVerdicts(Meet(Meet(a, b), c), Meet(a, Meet(b, c)), u.programs); d != "" {
			rt.Fatalf("not associative: %s", d)
		}
		if d := sameVerdicts(Meet(a, b), Meet(b, a), u.programs); d != "" {
			rt.Fatalf("not commutative: %s", d)
		}
		if d := sameRules(Meet(a, b), Meet(b, a)); d != "" {
			rt.Fatalf("not commutative as tables: %s", d)
		}
		if d := sameVerdicts(Meet(a, a), a, u.programs); d != "" {
			rt.Fatalf("not idempotent: %s", d)
		}
		aa := Meet(a, a)
		if d := sameRules(Meet(aa, aa), aa); d != "" {
			rt.Fatalf("not idempotent as a table: %s", d)
		}
	})
}

// sameRules compares two tables rule for rule, ignoring sources.
func sameRules(a, b *ExecTable) string {
	for _, m := range []struct {
		name string
		x, y map[string]*rule
	}{{"files", a.files, b.files}, {"tools", a.tools, b.tools}, {"dirs", a.dirs, b.dirs}, {"vetoes", a.vetoes, b.vetoes}} {
		for k, rx := range m.x {
			ry := m.y[k]
			if ry == nil {
				return fmt.Sprintf("%s: %s only on one side", m.name, k)
			}
			if !rx.verdict.Equal(ry.verdict) || rx.rank != ry.rank || rx.kind != ry.kind {
				return fmt.Sprintf("%s: %s is %v/%v vs %v/%v", m.name, k, rx.verdict, rx.rank, ry.verdict, ry.rank)
			}
		}
		for k := range m.y {
			if m.x[k] == nil {
				return fmt.Sprintf("%s: %s only on one side", m.name, k)
			}
		}
	}
	return ""
}

// lastMatch is a model of a last-match-wins kernel over Kernel(): the last
// rule that matches decides, none denies.
func lastMatch(rules []KernelRule, p Program) bool {
	allow := false
	real := p.Real()
	for _, r := range rules {
		var hit bool
		switch r.Kind {
		case RuleDir:
			if r.Fold {
				hit = within(collisionKey(real), collisionKey(r.Path))
			} else {
				hit = within(real, r.Path)
			}
		case RuleFile:
			if r.Fold {
				hit = collisionKey(real) == collisionKey(r.Path)
			} else {
				hit = real == r.Path
			}
		case RuleVeto:
			hit = nameKey(real) == nameKey(r.Path) || nameKey(p.Path()) == nameKey(r.Path)
		}
		if hit {
			allow = r.Allow
		}
	}
	return allow
}

// TestLawKernelLastMatchWins is property (c): a last-match-wins model over
// Kernel() gives the verdict (an Only is an allow to a kernel), for single
// layers and stacks; and the list is ordered as promised.
func TestLawKernelLastMatchWins(t *testing.T) {
	u := newUniverse(t)
	rapid.Check(t, func(rt *rapid.T) {
		a, b := u.table(rt, "a"), u.table(rt, "b")
		for _, tb := range []*ExecTable{a, Meet(a, b)} {
			k := tb.Kernel()
			if !slices.IsSortedFunc(k, func(x, y KernelRule) int {
				if x.Rank != y.Rank {
					return int(x.Rank) - int(y.Rank)
				}
				return cmpBool(!x.Allow, !y.Allow)
			}) {
				rt.Fatalf("kernel list out of order: %v", k)
			}
			files := map[string]bool{}
			for _, r := range k {
				if r.Kind == RuleFile {
					if files[r.Path] {
						rt.Fatalf("file %s rendered twice", r.Path)
					}
					files[r.Path] = true
				}
			}
			for _, p := range u.programs {
				if _, isTool := p.Tool(); isTool {
					continue
				}
				if got, want := lastMatch(k, p), !tb.Verdict(p).IsDeny(); got != want {
					rt.Fatalf("%v: last match %v, verdict %v\n  kernel %v", p, got, tb.Decide(p), k)
				}
			}
		}
	})
}

// pointwiseMeet is the meet spec 000 rejects: every key of either side is
// written at its met verdict, a default deny recorded as an authored one.
// It lives here only to show the law breaks without "kept iff".
func pointwiseMeet(a, b *ExecTable) *ExecTable {
	m := newExecTable()
	for _, side := range []*ExecTable{a, b} {
		for k, r := range side.files {
			v := a.Verdict(FileProgram(k, k)).Meet(b.Verdict(FileProgram(k, k)))
			m.files[k] = &rule{kind: RuleFile, target: k, folded: r.folded, rank: r.rank, verdict: v}
		}
		for k, r := range side.tools {
			v := a.Verdict(ToolProgram(k)).Meet(b.Verdict(ToolProgram(k)))
			m.tools[k] = &rule{kind: RuleTool, target: k, folded: r.folded, rank: r.rank, verdict: v}
		}
		for k, r := range side.dirs {
			v := a.dirVerdict(k).Meet(b.dirVerdict(k))
			m.dirs[k] = &rule{kind: RuleDir, target: k, folded: r.folded, rank: r.rank, verdict: v}
		}
		for k, r := range side.vetoes {
			m.vetoes[k] = r
		}
	}
	m.seal()
	return m
}

// TestPointwiseMeetCounterexample is spec 000's counterexample: on a
// byte-exact host, a = {allow dir /a/B} and b = {allow dir /a/B, allow dir
// /a/b}. At /a/B/x both layers allow; the pointwise table holds /a/b ↦ deny,
// which by collision ties /a/B and denies. The real meet keeps no deny
// nobody wrote, and allows.
func TestPointwiseMeetCounterexample(t *testing.T) {
	root := realTemp(t)
	caseSensitive(t, root)
	prog := mkexec(t, root, "a/B/x")
	mkexec(t, root, "a/b/x")
	a := compileLayer(t, layerOf("a", "allow "+root+"/a/B/"))
	b := compileLayer(t, layerOf("b", "allow "+root+"/a/B/", "allow "+root+"/a/b/"))
	programs := []Program{FileProgram(prog, prog)}

	if v := lawViolation(pointwiseMeet, a, b, programs); v == "" {
		t.Fatal("the pointwise meet kept the law on the counterexample; the law check has no teeth")
	} else {
		t.Logf("pointwise meet breaks the law, as spec 000 says: %s", v)
	}
	if d := pointwiseMeet(a, b).Decide(programs[0]); !d.Verdict.IsDeny() || d.Respelled != root+"/a/b" {
		t.Errorf("pointwise meet: %v", d)
	}
	if v := lawViolation(Meet, a, b, programs); v != "" {
		t.Fatal(v)
	}
	if got := Meet(a, b).Verdict(programs[0]); !got.IsAllow() {
		t.Fatalf("Meet denies %s: %v", prog, Meet(a, b).Decide(programs[0]))
	}
	if _, ok := Meet(a, b).dirs[root+"/a/b"]; ok {
		t.Error("Meet wrote /a/b, which nobody denied")
	}
}

// TestPointwiseMeetFailsProperty runs the property test's own check with
// the pointwise meet over the universe and expects it to find a break:
// the property is able to fail.
func TestPointwiseMeetFailsProperty(t *testing.T) {
	u := newUniverse(t)
	broke := false
	for i := 0; i < 200 && !broke; i++ {
		l1, l2 := Layer{Name: "a"}, Layer{Name: "b"}
		// a deterministic walk over pairs of dir keys
		d1, d2, d3 := u.dirs[i%len(u.dirs)], u.dirs[(i/3)%len(u.dirs)], u.dirs[(i/7)%len(u.dirs)]
		l1.Exec.Allow = []Spec{{Text: d1 + "/"}}
		l2.Exec.Allow = []Spec{{Text: d2 + "/"}, {Text: d3 + "/"}}
		a, b := compileLayer(t, l1), compileLayer(t, l2)
		if lawViolation(pointwiseMeet, a, b, u.programs) != "" {
			broke = true
		}
		if v := lawViolation(Meet, a, b, u.programs); v != "" {
			t.Fatal(v)
		}
	}
	if !broke {
		t.Fatal("no pair broke the pointwise meet")
	}
}

// TestUniverseSpellings checks the universe really holds the spellings the
// properties need: NFC and NFD é are distinct directories here, and fold to
// one collision key.
func TestUniverseSpellings(t *testing.T) {
	u := newUniverse(t)
	if _, err := os.Stat(filepath.Join(u.root, "u/a", eNFD, "x")); err != nil {
		t.Fatal(err)
	}
	if collisionKey("/a/"+eNFC) != collisionKey("/a/"+eNFD) || collisionKey(bigNFC) != collisionKey(eNFD) {
		t.Error("normalisation variants do not collide")
	}
	if collisionKey(kelvin) != "k" || !strings.EqualFold(collisionKey("/A/B"), "/a/b") {
		t.Error("case variants do not collide")
	}
}
