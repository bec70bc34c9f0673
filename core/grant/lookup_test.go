package grant

import (
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// A lookup (stat, access, readlink, chdir…) is allowed where a read is and
// on every ancestor of a read place; a hidden place denies it at any depth.
func TestAccessLookup(t *testing.T) {
	R := realTemp(t)
	caseSensitive(t, R)
	pipeline := Layer{Name: "pipeline"}
	pipeline.File.Read = []Spec{{Text: R + "/data/set"}, {Text: R + "/q/r"}}
	places := Places{
		Workspace: R + "/ws",
		Hidden:    []string{R + "/private", R + "/ws/eval", R + "/data/set/held", R + "/q/r"},
	}
	tb, err := Compile(places, Tools{}, pipeline)
	if err != nil {
		t.Fatal(err)
	}
	checkAccess(t, tb.Files, []accessCase{
		{"/", OpLookup, true, "", ""}, // the ancestor of every place
		{R, OpLookup, true, "", ""},   // of the workspace and of data/set
		{R + "/data", OpLookup, true, "grants.read", ""},
		{R + "/data", OpRead, false, "", ""}, // listing it reveals its entries: a read
		{R + "/data/set", OpLookup, true, "grants.read", ""},
		{R + "/data/set/x/y", OpLookup, true, "grants.read", ""},
		{R + "/data/other", OpLookup, false, "", ""}, // a sibling is on no way
		{R + "/dat", OpLookup, false, "", ""},        // a prefix of a name is no ancestor
		{R + "/ws/src", OpLookup, true, "workspace", ""},
		{R + "/ws/eval", OpLookup, false, "hidden", ""}, // hidden at any depth
		{R + "/ws/eval/t_test.go", OpLookup, false, "hidden", ""},
		{R + "/ws/Eval", OpLookup, false, "hidden", R + "/ws/eval"}, // under every spelling
		{R + "/private", OpLookup, false, "hidden", ""},
		{R + "/data/set/held", OpLookup, false, "hidden", ""}, // hidden beneath a read place
		{R + "/q", OpLookup, false, "", ""},                   // the way to a read place hidden whole
		{"relative", OpLookup, false, "", ""},
	})
	d := tb.Access(R, OpLookup)
	if d.Reason == "" || d.Rule.Kind != RulePlace || !within(d.Rule.Target, R) {
		t.Errorf("an ancestor's lookup names the place it leads to: %v", d)
	}
	if d := tb.Access(R+"/ws", OpLookup); d.Reason != "" {
		t.Errorf("a lookup within a place is an ordinary allow: %v", d)
	}
	if got := OpLookup.String(); got != "lookup" {
		t.Errorf("OpLookup.String() = %q", got)
	}
	for _, p := range []string{"/", R, R + "/ws/eval/x", R + "/elsewhere"} {
		if n := testing.AllocsPerRun(100, func() { tb.Access(p, OpLookup) }); n != 0 {
			t.Errorf("Access(%s, lookup) allocates %v times", p, n)
		}
	}
}

// The lookup rule's properties, over random read, write and hidden sets
// drawn from a small tree (with case variants) and every path of it:
//
//   - a lookup is allowed wherever a read is;
//   - a lookup allowed where a read is not is on the way to a read place:
//     some allowed read lies beneath the path;
//   - a hidden place (under every spelling) denies it at any depth;
//   - stacking layers only restricts lookups, as it restricts reads.
func TestLawLookup(t *testing.T) {
	R := realTemp(t)
	caseSensitive(t, R)
	var tree []string
	for _, d := range []string{"", "/a", "/a/b", "/a/b/c", "/a/B", "/a/B/c", "/a/bc", "/d", "/d/e", "/d/e/f"} {
		tree = append(tree, R+d)
	}
	all := append([]string{"/", filepath.Dir(R)}, tree...)
	draw := func(rt *rapid.T, label string, n int) []Spec {
		var out []Spec
		for _, p := range rapid.SliceOfNDistinct(rapid.SampledFrom(tree), 0, n, rapid.ID[string]).Draw(rt, label) {
			out = append(out, Spec{Text: p})
		}
		return out
	}
	layer := func(rt *rapid.T, name string) Layer {
		l := Layer{Name: name}
		l.File.Read = draw(rt, name+".read", 3)
		l.File.Write = draw(rt, name+".write", 2)
		return l
	}
	rapid.Check(t, func(rt *rapid.T) {
		var hidden []string
		for _, s := range draw(rt, "hidden", 2) {
			hidden = append(hidden, s.Text)
		}
		places := Places{Hidden: hidden}
		a, b := layer(rt, "pipeline"), layer(rt, "policy")
		one, err := Compile(places, Tools{}, a)
		if err != nil {
			rt.Fatal(err)
		}
		two, err := Compile(places, Tools{}, a, b)
		if err != nil {
			rt.Fatal(err)
		}
		for _, p := range all {
			look := one.Access(p, OpLookup)
			if one.Access(p, OpRead).Allowed() && !look.Allowed() {
				rt.Fatalf("%s: read allowed, lookup denied: %v", p, look)
			}
			if look.Allowed() && !one.Access(p, OpRead).Allowed() {
				beneath := false
				for _, q := range all {
					beneath = beneath || (q != p && within(q, p) && one.Access(q, OpRead).Allowed())
				}
				if !beneath && !strings.HasPrefix(p, "/proc") && p != "/" {
					rt.Fatalf("%s: lookup allowed on the way to no read place: %v", p, look)
				}
			}
			for _, h := range hidden {
				for _, sp := range []string{p, strings.ToUpper(p)} {
					if within(collisionKey(sp), collisionKey(h)) && one.Access(sp, OpLookup).Allowed() {
						rt.Fatalf("%s: within hidden %s, lookup allowed", sp, h)
					}
				}
			}
			if two.Access(p, OpLookup).Allowed() && !look.Allowed() {
				rt.Fatalf("%s: a second layer widened a lookup: %v", p, two.Access(p, OpLookup))
			}
		}
	})
}
