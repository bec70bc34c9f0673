package grant

import (
	"os"
	"path/filepath"
	"testing"
)

type accessCase struct {
	path      string
	op        Op
	allow     bool
	field     string // the deciding rule's first source field, when set
	respelled string
}

func checkAccess(t *testing.T, ft *FileTable, cases []accessCase) {
	t.Helper()
	for _, c := range cases {
		d := ft.Access(c.path, c.op)
		if d.Allowed() != c.allow {
			t.Errorf("%s %s: %v", c.op, c.path, d)
			continue
		}
		if c.field != "" && (len(d.Rule.Sources) == 0 || d.Rule.Sources[0].Field != c.field) {
			t.Errorf("%s %s: decided by %v, want a %s rule", c.op, c.path, d, c.field)
		}
		if d.Respelled != c.respelled {
			t.Errorf("%s %s: respelled %q, want %q", c.op, c.path, d.Respelled, c.respelled)
		}
	}
}

func TestAccessLayersMeetAndPlaces(t *testing.T) {
	R := realTemp(t)
	caseSensitive(t, R)
	for _, d := range []string{"ws/eval", "call", "home", "cache", "shared/sub", "out", "opt/go/bin", "private"} {
		if err := os.MkdirAll(filepath.Join(R, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mkexec(t, R, "ws/build.sh")
	mkexec(t, R, "ws/eval/judge")
	spec := func(p string) Spec { return Spec{Text: R + "/" + p} }
	pipeline := Layer{Name: "pipeline"}
	pipeline.File.Read = []Spec{spec("cache"), spec("shared")}
	pipeline.File.Write = []Spec{spec("out")}
	pipeline.File.SystemPaths = []Spec{spec("opt/go")}
	pipeline.Exec.Allow = []Spec{{Text: "@system"}}
	policy := Layer{Name: "policy"}
	policy.File.Read = []Spec{spec("shared/sub"), spec("cache")}
	policy.Exec.Allow = []Spec{{Text: "/"}}
	places := Places{
		Workspace:   R + "/ws",
		CallDirs:    []string{R + "/call"},
		PrivateHome: R + "/home",
		Hidden:      []string{R + "/private", R + "/ws/eval"},
	}

	one, err := Compile(places, Tools{}, pipeline)
	if err != nil {
		t.Fatal(err)
	}
	checkAccess(t, one.Files, []accessCase{
		{R + "/cache/x", OpRead, true, "grants.read", ""},
		{R + "/shared/y", OpRead, true, "grants.read", ""},
		{R + "/out/x", OpWrite, true, "grants.write", ""},
		{R + "/out/x", OpRead, true, "grants.write", ""},
		{R + "/cache/x", OpWrite, false, "", ""},
		{R + "/opt/go/bin/go", OpRead, true, "grants.systemPaths", ""},
		{R + "/opt/go/bin/go", OpExec, true, "grants.exec.allow", ""}, // executable like /usr, through @system
		{R + "/ws/src/a.go", OpWrite, true, "workspace", ""},
		{R + "/ws/build.sh", OpExec, true, "workspace", ""},
		{R + "/call/tmp/x", OpWrite, true, "call directory", ""},
		{R + "/call/sock", OpConnect, true, "call directory", ""},
		{R + "/home/.cache/x", OpWrite, true, "private home", ""},
		{R + "/ws/eval/hidden_test.go", OpRead, false, "hidden", ""},
		{R + "/ws/Eval/hidden_test.go", OpRead, false, "hidden", R + "/ws/eval"},
		{R + "/ws/eval/judge", OpExec, false, "hidden", ""},
		{R + "/private/trace", OpWrite, false, "hidden", ""},
		{R + "/elsewhere", OpRead, false, "", ""},
		{R + "/ws", OpMount, false, "", ""},
		{"relative/path", OpRead, false, "", ""},
	})

	stack, err := Compile(places, Tools{}, pipeline, policy)
	if err != nil {
		t.Fatal(err)
	}
	checkAccess(t, stack.Files, []accessCase{
		{R + "/cache/x", OpRead, true, "grants.read", ""},
		{R + "/shared/y", OpRead, false, "", ""},                     // the policy narrows shared to shared/sub
		{R + "/shared/sub/y", OpRead, true, "grants.read", ""},       // both cover it
		{R + "/out/x", OpWrite, false, "", ""},                       // the policy grants no write
		{R + "/opt/go/bin/go", OpRead, false, "", ""},                // nor that system path
		{R + "/ws/src/a.go", OpWrite, true, "workspace", ""},         // places are not layers
		{R + "/ws/build.sh", OpExec, true, "workspace", ""},          // in every layer's exec grant
		{R + "/ws/eval/hidden_test.go", OpRead, false, "hidden", ""}, // denies union
	})
	d := stack.Access(R+"/shared/sub/y", OpRead)
	if len(d.Rule.Sources) != 2 { // policy grants.read shared/sub, within pipeline grants.read shared
		t.Errorf("a met prefix names both layers' keys: %v", d.Rule.Sources)
	}
}

func TestAccessDoesNotAllocate(t *testing.T) {
	R := realTemp(t)
	tb, err := Compile(Places{Workspace: R, Hidden: []string{R + "/h"}}, Tools{}, Layer{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{R + "/src/Main.go", "/usr/lib/libc.so.6", "/nowhere/at/all", R + "/H/x", "/proc/self/status", "/proc/1/task/2/fd/3"} {
		for _, op := range []Op{OpRead, OpWrite} {
			if n := testing.AllocsPerRun(100, func() { tb.Access(p, op) }); n != 0 {
				t.Errorf("Access(%s, %s) allocates %v times", p, op, n)
			}
		}
	}
}
