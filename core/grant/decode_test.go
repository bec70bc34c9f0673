package grant

import (
	"errors"
	"strings"
	"testing"

	"github.com/warden-run/warden/core/errdefs"
)

func TestDecodeKeys(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	t.Setenv("PATH", "/p/one:relative::/p/two/:/p/one")
	l := Layer{Name: "pipeline"}
	l.Exec.Allow = []Spec{{Text: "git"}, {Text: "/usr/bin/git"}, {Text: "~/bin/x"}, {Text: "/usr/local/go/bin/"}, {Text: "~/"}, {Text: "@path"}, {Text: "@system"}}
	l.Exec.Deny = []Spec{{Text: "curl"}}
	l.Exec.Only = []OnlySpec{{Key: Spec{Text: "npm"}, Args: []string{"test", "ci"}}}
	l.File.SystemPaths = []Spec{{Text: "/opt/go"}}
	g, err := Decode(l)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range g.Entries {
		got = append(got, e.Verdict.String()+" "+e.Key.Kind.String()+" "+e.Key.String()+" <- "+e.Source.Key)
	}
	want := []string{
		"allow name git <- git",
		"allow path /usr/bin/git <- /usr/bin/git",
		"allow path /home/u/bin/x <- ~/bin/x",
		"allow dir /usr/local/go/bin/ <- /usr/local/go/bin/",
		"allow dir /home/u/ <- ~/",
		"allow dir /p/one/ <- @path",
		"allow dir /p/two/ <- @path",
	}
	for _, r := range SystemRoots {
		want = append(want, "allow dir "+r+"/ <- @system")
	}
	want = append(want, "allow dir /opt/go/ <- @system", "deny name curl <- curl", "only [ci test] name npm <- npm")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDecodeReportsEveryMalformedKey(t *testing.T) {
	pos := func(line int) Pos { return Pos{File: "pipeline.yaml", Line: line, Col: 9} }
	l := Layer{Name: "pipeline"}
	l.Exec.Allow = []Spec{
		{Text: "", Pos: pos(1)},
		{Text: "bin/x", Pos: pos(2)},
		{Text: "git", Pos: pos(3)}, // fine
		{Text: "@home", Pos: pos(4)},
		{Text: "~bob/bin", Pos: pos(5)},
		{Text: "..", Pos: pos(6)},
	}
	l.Exec.Deny = []Spec{{Text: "./curl", Pos: pos(7)}}
	l.Exec.Only = []OnlySpec{
		{Key: Spec{Text: "npm", Pos: pos(8)}},
		{Key: Spec{Text: "/usr/bin/", Pos: pos(9)}, Args: []string{"x"}},
		{Key: Spec{Text: "@path", Pos: pos(10)}, Args: []string{"x"}},
	}
	l.File.SystemPaths = []Spec{{Text: "opt/go", Pos: pos(11)}}
	_, err := Decode(l)
	if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Code(err) != errdefs.ExitUsage {
		t.Fatalf("not invalid input: %v", err)
	}
	msgs := strings.Split(err.Error(), "\n")
	lines := map[string]bool{}
	for _, m := range msgs {
		if !strings.HasPrefix(m, "pipeline.yaml:") {
			t.Errorf("message does not start with file:line:col: %q", m)
		}
		lines[strings.SplitN(m, ":", 3)[1]] = true
	}
	for _, want := range []string{"1", "2", "4", "5", "6", "7", "8", "9", "10", "11"} {
		if !lines[want] {
			t.Errorf("line %s not reported in:\n%v", want, err)
		}
	}
	if lines["3"] {
		t.Errorf("a good key was reported:\n%v", err)
	}
	if !strings.Contains(err.Error(), `pipeline.yaml:2:9: grants.exec.allow: key "bin/x" is a relative path`) {
		t.Errorf("message:\n%v", err)
	}
}

func TestCompileReportsAllLayers(t *testing.T) {
	a := Layer{Name: "pipeline"}
	a.Exec.Allow = []Spec{{Text: "x/y", Pos: Pos{File: "p.yaml", Line: 1, Col: 1}}}
	a.File.Read = []Spec{{Text: "rel", Pos: Pos{File: "p.yaml", Line: 2, Col: 1}}}
	b := Layer{Name: "policy"}
	b.File.Write = []Spec{{Text: "", Pos: Pos{File: "policy.yaml", Line: 3, Col: 1}}}
	_, err := Compile(Places{}, Tools{}, a, b)
	for _, want := range []string{"p.yaml:1:1: ", "p.yaml:2:1: grants.read", "policy.yaml:3:1: grants.write: empty key"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
}

func TestVerdictLattice(t *testing.T) {
	vs := []Verdict{Deny, Only(), Only("a"), Only("b"), Only("a", "b"), Allow}
	for _, x := range vs {
		if !x.Meet(x).Equal(x) || !x.Meet(Allow).Equal(x) || !x.Meet(Deny).Equal(Deny) {
			t.Errorf("%v: identity, absorption or idempotence", x)
		}
		for _, y := range vs {
			if !x.Meet(y).Equal(y.Meet(x)) {
				t.Errorf("%v ∧ %v not commutative", x, y)
			}
			for _, z := range vs {
				if !x.Meet(y).Meet(z).Equal(x.Meet(y.Meet(z))) {
					t.Errorf("%v ∧ %v ∧ %v not associative", x, y, z)
				}
			}
		}
	}
	if got := Only("a", "b").Meet(Only("b", "c")); !got.Equal(Only("b")) {
		t.Errorf("only meet: %v", got)
	}
	if Only().IsDeny() || !Only().Meet(Only("a")).Equal(Only()) || Only().Admits([]string{"x", ""}) {
		t.Error("Only() is above Deny and admits nothing")
	}
	if DirRank(3).String() != "dir(3)" || RankVeto.String() != "veto" || !(DirRank(1000) < RankCarrier && RankCarrier < RankExact && RankExact < RankVeto) {
		t.Error("rank order")
	}
}
