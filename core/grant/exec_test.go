package grant

import "testing"

// TestCarrier: admitting a bundled tool admits its carrier above every
// directory (the kernel sees only the carrier), below an exact key.
func TestCarrier(t *testing.T) {
	root := realTemp(t)
	carrier := mkexec(t, root, "libexec/warden")
	tools := Tools{Carrier: carrier, Names: []string{"fmt", "lint"}}
	compile := func(l Layer) *ExecTable {
		g, err := Decode(l)
		if err != nil {
			t.Fatal(err)
		}
		return CompileExec(g, tools)
	}

	tb := compile(layerOf("p", "allow fmt", "deny "+root+"/libexec/"))
	if d := tb.Decide(FileProgram(carrier, carrier)); !d.Verdict.IsAllow() || d.Rule.Rank != RankCarrier {
		t.Errorf("carrier under a deny dir: %v", d)
	}
	if d := tb.Decide(ToolProgram("fmt")); !d.Verdict.IsAllow() || d.Rule.Kind != RuleTool {
		t.Errorf("tool: %v", d)
	}
	if d := tb.Decide(ToolProgram("lint")); !d.Verdict.IsDeny() {
		t.Errorf("a tool nobody allowed: %v", d)
	}
	var rendered bool
	for _, r := range tb.Kernel() {
		if r.Path == carrier && r.Allow && r.Rank == RankCarrier {
			rendered = true
		}
	}
	if !rendered {
		t.Errorf("the kernel list lacks the carrier: %v", tb.Kernel())
	}

	tb = compile(layerOf("p", "allow fmt", "deny "+carrier))
	if d := tb.Decide(FileProgram(carrier, carrier)); !d.Verdict.IsDeny() {
		t.Errorf("an exact deny on the carrier: %v", d)
	}
	tb = compile(layerOf("p", "deny fmt", "allow "+root+"/"))
	if d := tb.Decide(ToolProgram("FMT")); !d.Verdict.IsDeny() || d.Rule.Kind != RuleVeto || d.Respelled != "fmt" {
		t.Errorf("a veto holds a tool under another spelling: %v", d)
	}
	if _, ok := tb.files[carrier]; ok {
		t.Error("no tool admitted, yet the carrier has a rule")
	}
}

// TestVetoBySpelling: a multi-call binary is one file, so a path key cannot
// tell its applets apart, but a bare deny vetoes the name it is run by.
func TestVetoBySpelling(t *testing.T) {
	root := realTemp(t)
	box := mkexec(t, root, "bin/busybox")
	tb := compileLayer(t, layerOf("p", "allow "+root+"/bin/", "deny wget"))
	if v := tb.Verdict(FileProgram(root+"/bin/ls", box)); !v.IsAllow() {
		t.Errorf("ls applet: %v", v)
	}
	if d := tb.Decide(FileProgram(root+"/bin/wget", box)); !d.Verdict.IsDeny() || d.Rule.Kind != RuleVeto {
		t.Errorf("wget applet: %v", d)
	}
}
