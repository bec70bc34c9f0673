package grant

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
)

// Tools are the programs bundled into warden's own binary, run by name with
// no PATH walk. Carrier is the real path of the binary that runs them: the
// kernel sees only that file, so when a table admits any tool it also admits
// the carrier, at RankCarrier (above every directory, below an exact key).
// The zero Tools has no tools; warden bundles none yet.
type Tools struct {
	Carrier string
	Names   []string
}

func (ts Tools) has(name string) bool { return slices.Contains(ts.Names, name) }

// rule is one entry of an ExecTable or FileTable.
type rule struct {
	kind    RuleKind
	target  string // stored form: real path, tool name, or a veto's name as written
	folded  string // collision key of target
	rank    Rank
	verdict Verdict
	sources []Source
}

func (r *rule) export() Rule {
	return Rule{Kind: r.kind, Target: r.target, Verdict: r.verdict, Rank: r.rank, Sources: slices.Clip(r.sources)}
}

// ExecTable is one layer's exec grant compiled over this host, or the meet
// of several (Stack). It is immutable once made and safe for concurrent use.
// Decide is the one function that gives an exec verdict; Kernel renders the
// same rules for a last-match-wins kernel.
type ExecTable struct {
	files  map[string]*rule // by real path: RankExact or RankCarrier
	tools  map[string]*rule // by tool name: RankExact
	dirs   map[string]*rule // by real path (no trailing '/'): DirRank(depth)
	vetoes map[string]*rule // by name key: RankVeto
	scan   []*rule          // files, dirs and vetoes, the rules a file program meets
}

func newExecTable() *ExecTable {
	return &ExecTable{
		files:  map[string]*rule{},
		tools:  map[string]*rule{},
		dirs:   map[string]*rule{},
		vetoes: map[string]*rule{},
	}
}

// CompileExec turns one layer's grant into a table over this host. A bare key
// is at most three rules: the file the process's own PATH finds (realpath),
// the bundled tool of that name, and for a deny a veto on the name
// everywhere. A path or dir key is its real form, frozen now (freeze) and
// never re-read. Every rule enters through meetInsert, so two keys reaching
// one file (or dir, tool, veto) meet.
func CompileExec(g ExecGrant, tools Tools) *ExecTable {
	t := newExecTable()
	pathEnv := os.Getenv("PATH")
	for _, e := range g.Entries {
		switch e.Key.Kind {
		case KeyName:
			if real, ok := lookPath(e.Key.Name, pathEnv); ok {
				t.meetInsert(t.files, RuleFile, real, RankExact, e.Verdict, e.Source)
			}
			if tools.has(e.Key.Name) {
				t.meetInsert(t.tools, RuleTool, e.Key.Name, RankExact, e.Verdict, e.Source)
			}
			if e.Verdict.IsDeny() {
				t.meetInsert(t.vetoes, RuleVeto, e.Key.Name, RankVeto, Deny, e.Source)
			}
		case KeyPath:
			t.meetInsert(t.files, RuleFile, freeze(e.Key.Name), RankExact, e.Verdict, e.Source)
		case KeyDir:
			real := freeze(e.Key.Name)
			t.meetInsert(t.dirs, RuleDir, real, DirRank(depth(real)), e.Verdict, e.Source)
		}
	}
	if tools.Carrier != "" {
		for _, r := range t.tools {
			if !r.verdict.IsDeny() {
				src := Source{Layer: "runtime", Field: "carrier of bundled tools", Key: tools.Carrier}
				t.meetInsert(t.files, RuleFile, tools.Carrier, RankCarrier, Allow, src)
				break
			}
		}
	}
	t.seal()
	return t
}

// meetInsert is the only way a rule enters a table: a second rule for the
// same key meets the first (verdicts meet, the higher rank stays, sources
// accumulate). For a directory the verdict is a bool: an Only cannot reach
// one (Decode refuses it).
func (t *ExecTable) meetInsert(m map[string]*rule, kind RuleKind, target string, rank Rank, v Verdict, srcs ...Source) {
	key := target
	if kind == RuleVeto {
		key = nameKey(target)
	}
	if r, ok := m[key]; ok {
		r.verdict = r.verdict.Meet(v)
		r.rank = max(r.rank, rank)
		r.sources = append(r.sources, srcs...)
		return
	}
	m[key] = &rule{kind: kind, target: target, folded: collisionKey(target), rank: rank, verdict: v, sources: slices.Clone(srcs)}
}

// seal builds the scan list, in a fixed order so that every answer (and
// every rendering) is deterministic.
func (t *ExecTable) seal() {
	t.scan = t.scan[:0]
	for _, m := range []map[string]*rule{t.files, t.dirs, t.vetoes} {
		for _, r := range m {
			t.scan = append(t.scan, r)
		}
	}
	slices.SortFunc(t.scan, func(a, b *rule) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.kind, b.kind), cmp.Compare(a.target, b.target))
	})
}

// lookPath finds name on a PATH value the way the host does for a bare key:
// the first absolute directory holding an executable regular file of that
// name, as its real path.
func lookPath(name, pathEnv string) (string, bool) {
	for _, dir := range pathDirs(pathEnv) {
		if real, ok := executable(filepath.Join(dir, name)); ok {
			return real, true
		}
	}
	return "", false
}

// executable returns the real path of p when it is an executable regular
// file (an x bit set; root may run any file with one).
func executable(p string) (string, bool) {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", false
	}
	real, err := filepath.EvalSymlinks(p)
	return real, err == nil
}

// Program is what an exec verdict judges: a bundled tool by name, or a file
// with the spelling the program sees as argv[0] (Path) and the realpath(3)
// of that spelling (Real), which is judged and run.
type Program struct {
	tool string
	path string
	real string
}

// ToolProgram is the bundled tool name.
func ToolProgram(name string) Program { return Program{tool: name} }

// FileProgram is the file spelled path whose real path is real. The caller
// vouches for real (ResolveHead computes it).
func FileProgram(path, real string) Program { return Program{path: path, real: real} }

// Tool returns the tool's name, and whether p is a tool.
func (p Program) Tool() (string, bool) { return p.tool, p.tool != "" }

// Path is the spelling (argv[0] as the program sees it); Real the real path.
func (p Program) Path() string { return p.path }

// Real is the real path that is judged and run ("" for a tool).
func (p Program) Real() string { return p.real }

// String renders a tool as "tool:NAME" and a file by its real path, with
// the spelling when it differs.
func (p Program) String() string {
	switch {
	case p.tool != "":
		return "tool:" + p.tool
	case p.path != "" && p.path != p.real:
		return p.real + " (as " + p.path + ")"
	}
	return p.real
}

// Verdict is Decide(p).Verdict.
func (t *ExecTable) Verdict(p Program) Verdict { return t.Decide(p).Verdict }

// Decide gives the verdict for a program, with the rule that decided it.
// Every exec verdict in warden comes from here.
//
// The rules that speak to p are gathered (an allow by stored name, a deny and
// a veto under every spelling; a tool hears only its exact rule and a veto);
// the highest rank decides and equal ranks meet; no rule denies. A denial
// whose deciding denies all hold p only under another spelling is marked
// Respelled, naming the denied spelling.
func (t *ExecTable) Decide(p Program) Decision {
	var f fold
	if name, ok := p.Tool(); ok {
		if r := t.tools[name]; r != nil {
			f.add(r, true)
		}
		if r := t.vetoes[nameKey(name)]; r != nil {
			f.add(r, r.target == name)
		}
		return f.decision("tool:"+name, OpExec)
	}
	sp := spell(p.real)
	realName, realKey := baseName(p.real), nameKey(p.real)
	shownName, shownKey := realName, realKey
	if p.path != "" && baseName(p.path) != realName {
		shownName, shownKey = baseName(p.path), nameKey(p.path)
	}
	for _, r := range t.scan {
		switch r.kind {
		case RuleFile:
			if sp.stored == r.target {
				f.add(r, true)
			} else if r.verdict.IsDeny() && sp.folded == r.folded {
				f.add(r, false)
			}
		case RuleDir:
			if within(sp.stored, r.target) {
				f.add(r, true)
			} else if r.verdict.IsDeny() && within(sp.folded, r.folded) {
				f.add(r, false)
			}
		case RuleVeto:
			if realKey == r.folded || shownKey == r.folded {
				f.add(r, realName == r.target || shownName == r.target)
			}
		}
	}
	return f.decision(p.String(), OpExec)
}

// dirVerdict is what a table's directories alone say at the directory k:
// the verdict a stack meets a directory key at.
func (t *ExecTable) dirVerdict(k string) Verdict {
	var f fold
	fk := collisionKey(k)
	for _, r := range t.dirs {
		if within(k, r.target) || (r.verdict.IsDeny() && within(fk, r.folded)) {
			f.add(r, true)
		}
	}
	return f.verdict
}

// fold is most_specific: among the rules that speak, the highest rank
// decides and equal ranks meet. It remembers a deciding rule for the
// Decision: for a denial, a deny of the top rank (one that holds the subject
// as stored when there is one).
type fold struct {
	any     bool
	rank    Rank
	verdict Verdict
	by      *rule // deciding rule
	stored  bool  // whether by holds the subject as stored
	ties    int   // speakers at the top rank
}

func (f *fold) add(r *rule, stored bool) {
	switch {
	case !f.any || r.rank > f.rank:
		*f = fold{any: true, rank: r.rank, verdict: r.verdict, by: r, stored: stored, ties: 1}
		return
	case r.rank < f.rank:
		return
	}
	f.ties++
	f.verdict = f.verdict.Meet(r.verdict)
	if r.verdict.IsDeny() && (!f.by.verdict.IsDeny() || (stored && !f.stored)) {
		f.by, f.stored = r, stored
	}
}

func (f *fold) decision(subject string, op Op) Decision {
	d := Decision{Subject: subject, Op: op, Verdict: f.verdict}
	if !f.any {
		d.Reason = "no match denies"
		return d
	}
	d.Rule = f.by.export()
	if f.verdict.IsDeny() && !f.stored {
		d.Respelled = f.by.target
	}
	if f.ties > 1 {
		d.Reason = "equal ranks meet"
	}
	return d
}

func baseName(p string) string { return filepath.Base(p) }
