package grant

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// mkexec creates an executable file at root/rel (and its parents).
func mkexec(t testing.TB, root, rel string) string {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// realTemp is t.TempDir() as a real path, so keys and programs agree.
func realTemp(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// caseSensitive skips unless root tells "a" from "A", as spec 000's worked
// cases require.
func caseSensitive(t *testing.T, root string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, "cs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "CS")); err == nil {
		t.Skip("the temporary directory is on a case-insensitive file system; spec 000's worked cases need a case-sensitive one")
	}
}

// layerOf builds a layer from "allow K" / "deny K" lines, with positions.
func layerOf(name string, lines ...string) Layer {
	l := Layer{Name: name}
	for i, ln := range lines {
		verb, key, _ := strings.Cut(ln, " ")
		s := Spec{Text: key, Pos: Pos{File: name + ".yaml", Line: i + 1, Col: 9}}
		switch verb {
		case "allow":
			l.Exec.Allow = append(l.Exec.Allow, s)
		case "deny":
			l.Exec.Deny = append(l.Exec.Deny, s)
		default:
			panic("bad line " + ln)
		}
	}
	return l
}

func compileLayer(t testing.TB, l Layer) *ExecTable {
	t.Helper()
	g, err := Decode(l)
	if err != nil {
		t.Fatal(err)
	}
	return CompileExec(g, Tools{})
}

// TestWorkedCases is spec 000's table of worked cases, on real files.
func TestWorkedCases(t *testing.T) {
	type check struct {
		program   string // relative to the case root
		want      Verdict
		respelled string // relative; "" for none
	}
	cases := []struct {
		name   string
		files  []string   // executables to create
		dirs   []string   // directories to create
		layers [][]string // each layer's lines, keys relative ("R/" is the case root)
		checks []check
	}{
		{
			name:   "allow dir /x/Tools, deny dir /x/tools/evil",
			files:  []string{"x/Tools/evil/t", "x/Tools/good/t"},
			layers: [][]string{{"allow R/x/Tools/", "deny R/x/tools/evil/"}},
			checks: []check{
				{"x/Tools/evil/t", Deny, "x/tools/evil"},
				{"x/Tools/good/t", Allow, ""},
			},
		},
		{
			name:   "allow dir /x/b, deny dir /x/B",
			files:  []string{"x/b/t"},
			dirs:   []string{"x/B"},
			layers: [][]string{{"allow R/x/b/", "deny R/x/B/"}},
			// One rank, the tie meets. The deny holds /x/b/t only as
			// /x/B, so the refusal names that spelling.
			checks: []check{{"x/b/t", Deny, "x/B"}},
		},
		{
			name:   "deny dir /x/B, allow file /x/b/tool",
			files:  []string{"x/b/tool"},
			dirs:   []string{"x/B"},
			layers: [][]string{{"deny R/x/B/", "allow R/x/b/tool"}},
			checks: []check{{"x/b/tool", Allow, ""}},
		},
		{
			name:   "stack a = {allow /a/B}, b = {allow /a/B, allow /a/b}",
			files:  []string{"a/B/x", "a/b/x"},
			layers: [][]string{{"allow R/a/B/"}, {"allow R/a/B/", "allow R/a/b/"}},
			checks: []check{{"a/B/x", Allow, ""}, {"a/b/x", Deny, ""}},
		},
		{
			name:   "stack a = {allow /a, deny /a/B}, b = {allow /a/b, allow /a/c}",
			files:  []string{"a/b/x", "a/c/x"},
			dirs:   []string{"a/B"},
			layers: [][]string{{"allow R/a/", "deny R/a/B/"}, {"allow R/a/b/", "allow R/a/c/"}},
			checks: []check{{"a/b/x", Deny, "a/B"}, {"a/c/x", Allow, ""}},
		},
		{
			name:   "two layers, one allowing /a/B, the other /a/b",
			files:  []string{"a/B/x", "a/b/x"},
			layers: [][]string{{"allow R/a/B/"}, {"allow R/a/b/"}},
			checks: []check{{"a/B/x", Deny, ""}, {"a/b/x", Deny, ""}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := realTemp(t)
			caseSensitive(t, root)
			for _, f := range tc.files {
				mkexec(t, root, f)
			}
			for _, d := range tc.dirs {
				if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var tables []*ExecTable
			for i, lines := range tc.layers {
				for j := range lines {
					lines[j] = strings.Replace(lines[j], "R/", root+"/", 1)
				}
				tables = append(tables, compileLayer(t, layerOf(string(rune('a'+i)), lines...)))
			}
			table := Stack(tables...)
			for _, c := range tc.checks {
				head := ResolveHead(filepath.Join(root, c.program), "/", "")
				if head.Missing != Present {
					t.Fatalf("%s: %v", c.program, head.Missing)
				}
				d := table.Decide(head.Program)
				if !d.Verdict.Equal(c.want) {
					t.Errorf("%s: verdict %v, want %v\n  %v", c.program, d.Verdict, c.want, d)
				}
				want := ""
				if c.respelled != "" {
					want = filepath.Join(root, c.respelled)
				}
				if d.Respelled != want {
					t.Errorf("%s: respelled %q, want %q\n  %v", c.program, d.Respelled, want, d)
				}
				if want != "" && !strings.Contains(d.String(), want) {
					t.Errorf("%s: the message does not name the denied spelling %q: %v", c.program, want, d)
				}
				// The law, on the worked case itself.
				law := Allow
				for _, tb := range tables {
					law = law.Meet(tb.Verdict(head.Program))
				}
				if !law.Equal(d.Verdict) {
					t.Errorf("%s: stack says %v, the layers' meet %v", c.program, d.Verdict, law)
				}
			}
		})
	}
}

// TestDecisionString pins the operator-facing rendering.
func TestDecisionString(t *testing.T) {
	root := realTemp(t)
	caseSensitive(t, root)
	prog := mkexec(t, root, "x/Tools/evil/t")
	l := layerOf("pipeline", "allow "+root+"/x/Tools/", "deny "+root+"/x/tools/evil/")
	l.Exec.Deny[0].Pos = Pos{File: "pipeline.yaml", Line: 12, Col: 9}
	d := compileLayer(t, l).Decide(FileProgram(prog, prog))
	want := `deny: ` + prog + ` — rule "deny dir ` + root + `/x/tools/evil" (pipeline grants.exec.deny "` + root + `/x/tools/evil/", pipeline.yaml:12:9, rank dir(` +
		strconv.Itoa(depth(root)+3) + `)); matched as respelled "` + root + `/x/tools/evil"`
	if d.String() != want {
		t.Errorf("got  %s\nwant %s", d, want)
	}
	none := Stack().Decide(FileProgram("/bin/x", "/bin/x"))
	if got := none.String(); got != "deny: /bin/x — no rule matches; no match denies" {
		t.Errorf("default deny renders %q", got)
	}
}
