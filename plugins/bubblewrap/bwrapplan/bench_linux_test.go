package bwrapplan

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkStart measures a no-op target: bare, and planned (socket scan
// included) and run under bwrap. Issue 4's goal: start cost under 15 ms.
func BenchmarkStart(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bwrap is not installed")
	}
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bwrap", func(b *testing.B) {
		f := newFixture(b, "")
		f.spec.Path, f.spec.Argv = "/bin/true", []string{"true"}
		p := New()
		for b.Loop() {
			plan, err := p.Plan(context.Background(), f.spec)
			if err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command(plan.GetArgv()[0], plan.GetArgv()[1:]...)
			cmd.Env, cmd.Dir = plan.GetEnv(), plan.GetDir()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	})
}
