package grant

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
)

// Op is the kind of access a traced system call makes.
type Op uint8

const (
	OpRead    Op = iota // open for reading, stat of contents, readdir
	OpWrite             // open for writing, create, unlink, rename, chmod…
	OpExec              // execve: judged by the exec table
	OpConnect           // connect to a Unix socket by path
	OpMount             // mount, pivot_root, open_tree…
	// OpLookup is a metadata-only access: the stat family, access,
	// readlink, chdir, statfs, the getxattr family. It reveals that a name
	// exists and its attributes, never a file's contents nor a directory's
	// entries (reading those is OpRead: open, getdents). A lookup is
	// allowed wherever a read is, and also on every ancestor of a read
	// place, since walking to a granted place looks up each directory on
	// the way ("/", "/home", …): see FileTable.Access.
	OpLookup
)

// String renders "read", "write", "exec", "connect", "mount" or "lookup".
func (o Op) String() string {
	if int(o) >= len(opNames) {
		return fmt.Sprintf("op(%d)", uint8(o))
	}
	return opNames[o]
}

var opNames = [...]string{"read", "write", "exec", "connect", "mount", "lookup"}

// Places are the places the runtime gives one launch, beyond what the
// layers grant. Every path is absolute; Compile freezes each to its real
// form. They are added after the layers meet: a policy layer restricts the
// grants, never the workspace the target works in.
type Places struct {
	Workspace   string   // the disposable checkout: read, write, and its programs run
	CallDirs    []string // the call directories: read, write, and their programs run
	PrivateHome string   // the empty home mounted at the user's home path: read, write
	ExtraRead   []string // read, beyond the grants (e.g. a toolchain cache the engine shares)
	ExtraWrite  []string // read and write, beyond the grants
	// Hidden are denied for every access, at any depth and under every
	// spelling, whatever else covers them: the private root, the run
	// directories, the withheld evaluation folder, the host repository's git
	// directory. They also enter every exec layer as deny dirs.
	Hidden []string
}

// FileTable is the compiled file grant of a stack of layers plus the
// runtime places: allow prefixes for reading and for writing (each layer's
// allow set met with the others', then the places added), deny prefixes
// (unioned), and the exec table for OpExec. It is immutable and safe for
// concurrent use.
type FileTable struct {
	read, write []*rule // stored prefixes, deepest first
	deny        []*rule // held under every spelling
	exec        *ExecTable
}

// prefixSet is a set of stored path prefixes, each with where it came from.
type prefixSet map[string]*rule

func (s prefixSet) add(p string, src Source) {
	if r, ok := s[p]; ok {
		r.sources = append(r.sources, src)
		return
	}
	s[p] = &rule{kind: RulePlace, target: p, folded: collisionKey(p), rank: DirRank(depth(p)), verdict: Allow, sources: []Source{src}}
}

// meet is PrefixSet<Allow>::meet: a path is in the result iff both sets
// cover it, so the result holds each prefix of one side that lies within a
// prefix of the other (by stored containment), with both sides' sources.
func (s prefixSet) meet(o prefixSet) prefixSet {
	out := prefixSet{}
	keep := func(from, other prefixSet) {
		for k, r := range from {
			for ok, or := range other {
				if within(k, ok) {
					for _, src := range append(slices.Clone(r.sources), or.sources...) {
						out.add(k, src)
					}
				}
			}
		}
	}
	keep(s, o)
	keep(o, s)
	for _, r := range out {
		r.sources = slices.CompactFunc(r.sources, func(a, b Source) bool { return a == b })
	}
	return out
}

func (s prefixSet) sorted() []*rule {
	out := make([]*rule, 0, len(s))
	for _, r := range s {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *rule) int {
		return cmp.Or(cmp.Compare(b.rank, a.rank), cmp.Compare(a.target, b.target))
	})
	return out
}

// fileLayer decodes one layer's file grant into its allow sets: reads are
// grants.read, grants.write and systemPaths; writes are grants.write.
func fileLayer(l Layer) (read, write prefixSet, sysErrs, errs []error) {
	read, write = prefixSet{}, prefixSet{}
	for _, f := range []struct {
		specs []Spec
		field string
		sets  []prefixSet
	}{
		{l.File.Read, "grants.read", []prefixSet{read}},
		{l.File.Write, "grants.write", []prefixSet{read, write}},
		{l.File.SystemPaths, "grants.systemPaths", []prefixSet{read}},
	} {
		for _, s := range f.specs {
			paths, perrs := decodePaths(l, []Spec{s}, f.field)
			if f.field == "grants.systemPaths" {
				sysErrs = append(sysErrs, perrs...)
			} else {
				errs = append(errs, perrs...)
			}
			for _, p := range paths {
				for _, set := range f.sets {
					set.add(freeze(p), Source{Layer: l.Name, Field: f.field, Key: s.Text, Pos: s.Pos})
				}
			}
		}
	}
	return read, write, sysErrs, errs
}

// CompileFiles builds the file table of a stack of layers with the
// runtime places, judging exec accesses by exec (which may be nil: then
// every exec is denied). Malformed keys are reported like Decode's.
func CompileFiles(exec *ExecTable, places Places, layers ...Layer) (*FileTable, error) {
	t, sysErrs, errs := compileFiles(exec, places, layers)
	return t, errors.Join(append(sysErrs, errs...)...)
}

func compileFiles(exec *ExecTable, places Places, layers []Layer) (*FileTable, []error, []error) {
	var read, write prefixSet
	var sysErrs, errs []error
	for i, l := range layers {
		r, w, se, e := fileLayer(l)
		sysErrs, errs = append(sysErrs, se...), append(errs, e...)
		if i == 0 {
			read, write = r, w
			continue
		}
		read, write = read.meet(r), write.meet(w)
	}
	if read == nil {
		read, write = prefixSet{}, prefixSet{}
	}
	runtime := func(field string) Source { return Source{Layer: "runtime", Field: field} }
	addAll := func(field string, frozen bool, paths []string, sets ...prefixSet) {
		for _, p := range paths {
			if p == "" {
				continue
			}
			if frozen {
				p = freeze(p)
			}
			for _, s := range sets {
				s.add(p, runtime(field))
			}
		}
	}
	addAll("system root", true, SystemRoots, read)
	addAll("system configuration", true, systemConfig, read)
	addAll("pseudo-file system", false, pseudoReads, read)
	addAll("pseudo-file system", false, pseudoWrites, write)
	addAll("workspace", true, []string{places.Workspace}, read, write)
	addAll("call directory", true, places.CallDirs, read, write)
	addAll("private home", true, []string{places.PrivateHome}, read, write)
	addAll("extra read", true, places.ExtraRead, read)
	addAll("extra write", true, places.ExtraWrite, read, write)
	deny := prefixSet{}
	addAll("hidden", true, places.Hidden, deny)
	for _, r := range deny {
		r.verdict = Deny
	}
	if exec == nil {
		exec = Stack()
	}
	return &FileTable{read: read.sorted(), write: write.sorted(), deny: deny.sorted(), exec: exec}, sysErrs, errs
}

// Exec is the exec table OpExec is judged by.
func (t *FileTable) Exec() *ExecTable { return t.exec }

// Access judges one traced access: the one function every audit plugin
// calls. path is absolute, clean and already resolved (a real path, or the
// spelling of a /proc or /dev magic link as the trace gives it); Access reads
// no file system. In order:
//
//   - exec is the exec table's verdict for the file (ExecTable.Decide);
//   - mount is never allowed: a target never mounts;
//   - /proc and /dev/fd are judged by their own rule (procAccess): ordinary
//     reads are allowed, the magic links that lead anywhere never are;
//   - a hidden place denies, at any depth and under every spelling;
//   - a read is allowed within a read place, a write or a connect within a
//     write place (the deepest such place is reported);
//   - a lookup (metadata only: stat, access, readlink, chdir…) is allowed
//     within a read place and on every ancestor of one ("/", "/home" when
//     /home/u/src is readable): resolving a granted path looks up every
//     directory on the way, and a lookup of a directory reveals its
//     attributes, never its entries. The hidden-place rule above still
//     comes first, so a lookup of a hidden place, or of anything beneath
//     it, is denied, even where a read place lies beneath it; and a read
//     place a hidden place covers whole is on no way;
//   - nothing else is allowed.
//
// It does not allocate for an ASCII path outside /proc.
func (t *FileTable) Access(path string, op Op) Decision {
	switch {
	case op == OpExec:
		return t.exec.Decide(FileProgram(path, path))
	case op == OpMount:
		return Decision{Subject: path, Op: op, Verdict: Deny, Reason: "a target never mounts"}
	case !filepath.IsAbs(path):
		return Decision{Subject: path, Op: op, Verdict: Deny, Reason: "not an absolute path"}
	}
	if v, target, reason, ok := procAccess(path, op); ok {
		d := Decision{Subject: path, Op: op, Verdict: v, Reason: reason}
		if target != "" {
			d.Rule = Rule{Kind: RuleSpecial, Target: target, Verdict: v, Rank: RankExact, Sources: pseudoSources}
		}
		return d
	}
	ascii := isASCII(path)
	folded := path
	if !ascii {
		folded = collisionKey(path)
	}
	for _, r := range t.deny {
		if (ascii && asciiFoldWithin(path, r.folded)) || (!ascii && within(folded, r.folded)) {
			d := Decision{Subject: path, Op: op, Verdict: Deny, Rule: r.export(), Reason: "a hidden place denies at any depth"}
			if !within(path, r.target) {
				d.Respelled = r.target
			}
			return d
		}
	}
	set := t.read
	if op == OpWrite || op == OpConnect {
		set = t.write
	}
	for _, r := range set {
		if within(path, r.target) {
			return Decision{Subject: path, Op: op, Verdict: Allow, Rule: r.export()}
		}
	}
	if op == OpLookup {
		// The shallowest read place beneath path names the way (the set
		// is deepest first, so the last match).
		var way *rule
		for _, r := range set {
			if within(r.target, path) && !t.hides(r) {
				way = r
			}
		}
		if way != nil {
			return Decision{Subject: path, Op: op, Verdict: Allow, Rule: way.export(),
				Reason: "an ancestor of a readable place: a lookup on the way reveals no contents"}
		}
	}
	return Decision{Subject: path, Op: op, Verdict: Deny, Reason: "no match denies"}
}

// hides reports whether a hidden place covers the whole of place r: then
// r is no readable place and no lookup is on the way to it.
func (t *FileTable) hides(r *rule) bool {
	for _, h := range t.deny {
		if within(r.folded, h.folded) {
			return true
		}
	}
	return false
}

// pseudoSources name the runtime as the source of the pseudo-file-system rules.
var pseudoSources = []Source{{Layer: "runtime", Field: "pseudo-file system"}}

// asciiFoldWithin is within(collisionKey(p), k) for an ASCII p, without
// building the key: ASCII case folding is lower-casing.
func asciiFoldWithin(p, k string) bool {
	if k == "/" {
		return len(p) > 0 && p[0] == '/'
	}
	if len(p) < len(k) || (len(p) > len(k) && p[len(k)] != '/') {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := p[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != k[i] {
			return false
		}
	}
	return true
}

// Table is everything compiled for one launch: the stacked exec table and
// the file table over it. Both read the same layers; Access and
// CheckExec are the two questions anyone asks of them.
type Table struct {
	Exec  *ExecTable
	Files *FileTable
}

// Compile decodes every layer, compiles its exec grant (with the runtime
// places' exec dirs: the workspace and call dirs allowed, hidden places
// denied, in every layer so the meet keeps them), stacks the exec tables,
// and builds the file table. All malformed keys of all layers are reported
// at once. With no layer there are no grants: no program is admitted, and
// only the runtime places and system roots are readable.
func Compile(places Places, tools Tools, layers ...Layer) (Table, error) {
	var errs []error
	execs := make([]*ExecTable, 0, len(layers))
	for _, l := range layers {
		g, err := Decode(l)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		g.Entries = append(g.Entries, places.execEntries()...)
		execs = append(execs, CompileExec(g, tools))
	}
	exec := Stack(execs...)
	files, _, ferrs := compileFiles(exec, places, layers) // systemPaths errors came from Decode
	if err := errors.Join(append(errs, ferrs...)...); err != nil {
		return Table{}, err
	}
	return Table{Exec: exec, Files: files}, nil
}

// Access is t.Files.Access.
func (t Table) Access(path string, op Op) Decision { return t.Files.Access(path, op) }

// CheckExec is t.Exec.CheckExec.
func (t Table) CheckExec(head Head, argv []string) (Admitted, error) {
	return t.Exec.CheckExec(head, argv)
}

// execEntries are the runtime places as exec keys of every layer.
func (p Places) execEntries() []ExecEntry {
	var out []ExecEntry
	add := func(dir, field string, v Verdict) {
		if dir != "" {
			out = append(out, ExecEntry{Key: ExecKey{Kind: KeyDir, Name: dir}, Verdict: v, Source: Source{Layer: "runtime", Field: field}})
		}
	}
	add(p.Workspace, "workspace", Allow)
	for _, d := range p.CallDirs {
		add(d, "call directory", Allow)
	}
	for _, d := range p.Hidden {
		add(d, "hidden", Deny)
	}
	return out
}
