package grant

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/warden-run/warden/core/errdefs"
)

func TestResolveHead(t *testing.T) {
	root := realTemp(t)
	run := mkexec(t, root, "bin/run")
	mkexec(t, root, "bin2/other")
	plain := filepath.Join(root, "plain/run") // a non-executable file
	if err := os.MkdirAll(filepath.Dir(plain), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "plain/only"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// deep/dir/x and a link L -> deep/dir: "L/../x" is deep/x to the
	// kernel, which walks ".." after the link, and root/x lexically.
	deep := mkexec(t, root, "deep/x")
	mkexec(t, root, "deep/dir/x")
	mkexec(t, root, "x")
	if err := os.Symlink(filepath.Join(root, "deep/dir"), filepath.Join(root, "L")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(run, filepath.Join(root, "bin/alias")); err != nil {
		t.Fatal(err)
	}
	pathEnv := root + "/plain:" + root + "/bin:" + root + "/bin2"

	tests := []struct {
		name, argv0, cwd string
		missing          Missing
		path, real       string
	}{
		{"bare name walks PATH past a non-executable", "run", "/", Present, root + "/bin/run", run},
		{"bare name in a later PATH dir", "other", "/", Present, root + "/bin2/other", root + "/bin2/other"},
		{"bare name found only non-executable is 126", "only", "/", NotExecutable, "", ""},
		{"bare name found nowhere is 127", "nope", "/", NotFound, "", ""},
		{"empty head is 127", "", "/", NotFound, "", ""},
		{"absolute path", run, "/", Present, run, run},
		{"relative path anchored at cwd", "./bin/run", root, Present, root + "/./bin/run", run},
		{"relative path without ./", "bin/run", root, Present, root + "/bin/run", run},
		{"a link runs its target, spelled as written", "bin/alias", root, Present, root + "/bin/alias", run},
		{"'..' after a link leaves the link's target", "L/../x", root, Present, root + "/L/../x", deep},
		{"trailing '/' on a file is 126", "bin/run/", root, NotExecutable, "", ""},
		{"trailing '/' on a directory is 126", "bin/", root, NotExecutable, "", ""},
		{"trailing '/' on nothing is 127", "nothing/", root, NotFound, "", ""},
		{"a directory is 126", root + "/bin", "/", NotExecutable, "", ""},
		{"a non-executable file is 126", "plain/run", root, NotExecutable, "", ""},
		{"a path through a file is 126", "bin/run/x", root, NotExecutable, "", ""},
		{"a missing path is 127", "bin/missing", root, NotFound, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := ResolveHead(tc.argv0, tc.cwd, pathEnv)
			if h.Shown != tc.argv0 || h.Missing != tc.missing {
				t.Fatalf("got %+v, want missing %v", h, tc.missing)
			}
			if tc.missing != Present {
				want := map[Missing]int{NotFound: 127, NotExecutable: 126}[tc.missing]
				if got := errdefs.Code(h.Err()); got != want {
					t.Errorf("exit code %d, want %d (%v)", got, want, h.Err())
				}
				if _, err := Stack().CheckExec(h, []string{tc.argv0}); errdefs.Code(err) != want {
					t.Errorf("CheckExec: %v, want exit %d before any grant", err, want)
				}
				return
			}
			if h.Program.Path() != tc.path || h.Program.Real() != tc.real {
				t.Errorf("program %q real %q, want %q real %q", h.Program.Path(), h.Program.Real(), tc.path, tc.real)
			}
		})
	}
}

func TestToolHeads(t *testing.T) {
	root := realTemp(t)
	mkexec(t, root, "bin/fmt")
	tools := Tools{Carrier: mkexec(t, root, "warden"), Names: []string{"fmt"}}
	h := tools.ResolveHead("fmt", "/", root+"/bin")
	if name, ok := h.Program.Tool(); !ok || name != "fmt" {
		t.Fatalf("a bundled name is its tool with no walk: %+v", h)
	}
	if h := ResolveHead("fmt", "/", root+"/bin"); h.Program.Real() != root+"/bin/fmt" {
		t.Fatalf("without tools the name walks PATH: %+v", h)
	}
}

func TestCheckExec(t *testing.T) {
	root := realTemp(t)
	npm := mkexec(t, root, "bin/npm")
	curl := mkexec(t, root, "bin/curl")
	other := mkexec(t, root, "other/curl") // another file with a vetoed name
	t.Setenv("PATH", root+"/bin")
	l := Layer{Name: "pipeline"}
	l.Exec.Allow = []Spec{{Text: root + "/bin/"}, {Text: root + "/other/"}}
	l.Exec.Deny = []Spec{{Text: "curl", Pos: Pos{File: "p.yaml", Line: 3, Col: 5}}}
	l.Exec.Only = []OnlySpec{{Key: Spec{Text: "npm"}, Args: []string{"test", "ci"}}}
	table := compileLayer(t, l)
	pathEnv := root + "/bin"

	a, err := table.CheckExec(ResolveHead("npm", "/", pathEnv), []string{"npm", "test", "--x"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Path() != npm || !equalStrings(a.Args(), []string{"npm", "test", "--x"}) || a.Table() != table {
		t.Errorf("admitted %q %q", a.Path(), a.Args())
	}
	if _, err := table.CheckExec(ResolveHead("npm", "/", pathEnv), []string{"npm", "install"}); err == nil {
		t.Error("only [ci test] admitted install")
	} else if errdefs.Code(err) != errdefs.ExitAccess {
		t.Errorf("refusal class: %v", err)
	}
	if _, err := table.CheckExec(ResolveHead("npm", "/", pathEnv), []string{"npm"}); err == nil {
		t.Error("only [ci test] admitted no argument")
	}
	for _, head := range []string{curl, other, "curl"} {
		_, err := table.CheckExec(ResolveHead(head, "/", pathEnv), []string{head})
		var denied *DeniedError
		if !errors.As(err, &denied) || denied.Decision.Rule.Kind != RuleVeto {
			t.Errorf("%s: a bare deny vetoes the name everywhere: %v", head, err)
		}
	}
	// argv[0] is the head as written, whatever the caller passed.
	a, err = table.CheckExec(ResolveHead(root+"/bin/npm", "/", pathEnv), []string{"x", "ci"})
	if err != nil || a.Args()[0] != root+"/bin/npm" {
		t.Errorf("argv[0]: %v %v", a.Args(), err)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSymlinkConsequences: a link to an admitted file is admitted; a link
// under an admitted directory to a file outside it is not.
func TestSymlinkConsequences(t *testing.T) {
	root := realTemp(t)
	ok := mkexec(t, root, "ok/tool")
	bad := mkexec(t, root, "outside/tool")
	if err := os.MkdirAll(root+"/links", 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink(ok, root+"/elsewhere-ok")
	os.Symlink(bad, root+"/links/bad")
	table := compileLayer(t, layerOf("p", "allow "+root+"/links/", "allow "+ok))
	if v := table.Verdict(ResolveHead(root+"/elsewhere-ok", "/", "").Program); !v.IsAllow() {
		t.Errorf("a link to an admitted file: %v", v)
	}
	if v := table.Verdict(ResolveHead(root+"/links/bad", "/", "").Program); !v.IsDeny() {
		t.Errorf("a link under an admitted dir to a file outside: %v", v)
	}
}
