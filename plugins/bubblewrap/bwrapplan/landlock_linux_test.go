package bwrapplan

import (
	"fmt"
	"github.com/warden-run/warden/plugins/bubblewrap/bwrapshim"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/warden-run/warden/core/grant"
	"github.com/warden-run/warden/core/grantwire"
	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
)

func keys(ss ...string) []*pb.GrantKey {
	var out []*pb.GrantKey
	for _, s := range ss {
		out = append(out, &pb.GrantKey{Text: s})
	}
	return out
}

// TestLandlockExpressible compiles real grant tables and asks whether
// Landlock's allow-only rules can express their exec verdicts.
func TestLandlockExpressible(t *testing.T) {
	ws := t.TempDir()
	bin := filepath.Join(t.TempDir(), "tools")
	if err := os.MkdirAll(filepath.Join(bin, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a", "sub/b"} {
		if err := os.WriteFile(filepath.Join(bin, f), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range map[string]struct {
		layer   *pb.GrantLayer
		covered []string
		want    []string // allowed paths, or nil
		why     string
	}{
		"dirs": {layer: &pb.GrantLayer{ExecAllow: keys(bin + "/")}, want: []string{bin, ws}},
		"a file beneath a denied dir": {
			layer: &pb.GrantLayer{ExecAllow: keys(filepath.Join(bin, "sub", "b")), ExecDeny: keys(bin + "/")},
			want:  []string{filepath.Join(bin, "sub", "b"), ws},
		},
		"a deny beneath an allowed dir": {
			layer: &pb.GrantLayer{ExecAllow: keys(bin + "/"), ExecDeny: keys(filepath.Join(bin, "sub") + "/")},
			why:   "carved out of the allowed directory " + bin,
		},
		"a denied file beneath an allowed dir": {
			layer: &pb.GrantLayer{ExecAllow: keys(bin + "/"), ExecDeny: keys(filepath.Join(bin, "a"))},
			why:   "carved out",
		},
		"a name veto": {
			layer: &pb.GrantLayer{ExecAllow: keys(bin + "/"), ExecDeny: keys("sudo")},
			why:   "carved out",
		},
		"a covered deny is vacuous": {
			layer:   &pb.GrantLayer{ExecAllow: keys(bin + "/"), ExecDeny: keys(filepath.Join(bin, "sub") + "/")},
			covered: []string{filepath.Join(bin, "sub")},
			want:    []string{bin, ws},
		},
		"no layer": {why: "admits no program"},
	} {
		t.Run(name, func(t *testing.T) {
			var layers []grant.Layer
			if c.layer != nil {
				c.layer.Name = "pipeline"
				layers = append(layers, grantwire.FromProto(c.layer))
			}
			table, err := grant.Compile(grant.Places{Workspace: ws}, grant.Tools{}, layers...)
			if err != nil {
				t.Fatal(err)
			}
			got, why := landlockExec(table.Exec.Kernel(), c.covered, nil)
			if c.want != nil && (why != "" || !slices.Equal(got, sortUniq(c.want))) {
				t.Errorf("got %q (%s), want %q", got, why, c.want)
			}
			if c.want == nil && (got != nil || !strings.Contains(why, c.why)) {
				t.Errorf("got %q, reason %q; want none, reason naming %q", got, why, c.why)
			}
		})
	}
}

// TestViewLandlockExec grants exec of the shell alone: a program outside
// the allow set fails with EACCES, the shell and the workspace's programs
// run, and PID 1 of the sandbox is outside the target's domain.
func TestViewLandlockExec(t *testing.T) {
	needBwrap(t)
	abi, err := bwrapshim.LandlockABI()
	if err != nil || abi < 1 {
		t.Skipf("the kernel has no Landlock: %v", err)
	}
	f := newFixture(t, "")
	sh, _ := filepath.EvalSymlinks("/bin/sh")
	id := filepath.Join(f.ws, "my-id")
	b, err := os.ReadFile("/usr/bin/id")
	if err != nil {
		t.Skip("no /usr/bin/id")
	}
	if err := os.WriteFile(id, b, 0o755); err != nil {
		t.Fatal(err)
	}
	f.spec.Grants = []*pb.GrantLayer{{Name: "pipeline", ExecAllow: keys("/bin/sh", helperBin)}}
	f.spec.Argv[2] = fmt.Sprintf(`%q -u >/dev/null && echo WS-OK; /usr/bin/id -u && echo ID-RAN; %q %s ptrace:1; cp /etc/hostname "$PWD/h" && echo CP-RAN; echo done`, id, helperBin, escapeArg)
	out, stderr, code := f.run(t)
	want := "WS-OK\nptrace:1 operation not permitted\ndone\n"
	if code != 0 || out != want {
		t.Errorf("exit %d stdout %q want %q stderr %q", code, out, want, stderr)
	}
	if n := strings.Count(stderr, "Permission denied"); n != 2 {
		t.Errorf("want id and cp refused (EACCES), stderr %q", stderr)
	}
	if _, err := os.Lstat(filepath.Join(f.ws, "h")); err == nil {
		t.Errorf("cp ran")
	}
	fc := planFacts(t, f)
	if !strings.HasPrefix(fc.Landlock, fmt.Sprintf("in force (ABI %d)", abi)) || !slices.Contains(fc.LandlockExec, sh) || !slices.Contains(fc.LandlockExec, f.ws) || fc.Shim == "" {
		t.Errorf("facts landlock %q exec %q shim %q", fc.Landlock, fc.LandlockExec, fc.Shim)
	}
	if slices.Contains(fc.LandlockExec, "/usr/bin") || slices.Contains(fc.LandlockExec, "/usr") {
		t.Errorf("the allow set is wider than granted: %q", fc.LandlockExec)
	}
}

// TestPlanLandlockNotInForce: without Landlock, or without the shim, the
// facts say why and the plan has no shim; a table Landlock cannot express
// gets a domain for isolation only, exec not limited.
func TestPlanLandlockNotInForce(t *testing.T) {
	f := newFixture(t, "true")
	f.spec.Grants = []*pb.GrantLayer{{Name: "pipeline", ExecAllow: keys("@system"), ExecDeny: keys("sudo")}}
	for _, c := range []struct {
		opts planOpts
		want string
		shim bool
	}{
		{planOpts{landlockWhy: "the kernel has no Landlock (function not implemented)", shim: "/x/shim"}, "not in force: the kernel has no Landlock", false},
		{planOpts{landlockABI: 7}, "not in force: the shim's binary", false},
		{planOpts{landlockABI: 7, shim: "/x/shim"}, "in force (ABI 7) for isolation only: exec is not limited, because the deny of name sudo is carved out", true},
		{planOpts{landlockABI: 5, shim: "/x/shim"}, "in force (ABI 5) for isolation only", true},
	} {
		plan, err := buildWith("/usr/bin/bwrap", "0.8.0", f.spec, socketScan{}, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		var fc Facts
		if err := jsonUnmarshal(plan.GetFactsJson(), &fc); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(fc.Landlock, c.want) || (fc.Shim != "") != c.shim || fc.Exec != "audited only: bwrap cannot filter exec" || slices.Contains(plan.GetArgv(), bwrapshim.Path) != c.shim {
			t.Errorf("landlock %q exec %q shim %q, want %q", fc.Landlock, fc.Exec, fc.Shim, c.want)
		}
		if c.shim {
			cfg := plan.GetArgv()[slices.Index(plan.GetArgv(), bwrapshim.Arg)+1]
			if want := fmt.Sprintf(`{"landlock":%d,"exec":["/"]%s}`, c.opts.landlockABI, map[bool]string{true: `,"scope":true`}[c.opts.landlockABI >= 6]); cfg != want {
				t.Errorf("shim config %s, want %s", cfg, want)
			}
		}
	}
}

func TestShimBeside(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "warden-plugin-bubblewrap")
	if got := shimBeside(plugin); got != plugin {
		t.Errorf("without a shim beside it: %s", got)
	}
	shim := filepath.Join(dir, bwrapshim.Binary)
	if err := os.WriteFile(shim, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := shimBeside(plugin); got != plugin {
		t.Errorf("with a shim that is not executable: %s", got)
	}
	if err := os.Chmod(shim, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := shimBeside(plugin); got != shim {
		t.Errorf("with the shim beside it: %s", got)
	}
}

// TestViewLandlockScriptHead: the head is a workspace script and only the
// workspace is granted; the script's interpreter comes with the head, the
// programs the script runs do not.
func TestViewLandlockScriptHead(t *testing.T) {
	needBwrap(t)
	if abi, err := bwrapshim.LandlockABI(); err != nil || abi < 1 {
		t.Skipf("the kernel has no Landlock: %v", err)
	}
	f := newFixture(t, "")
	script := filepath.Join(f.ws, "solve.sh")
	write(t, script, "#!/bin/sh\necho script-ran\n/usr/bin/id -u && echo ID-RAN\nexit 3\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	f.spec.Path, f.spec.Argv = script, []string{"./solve.sh"}
	f.spec.Grants = []*pb.GrantLayer{{Name: "pipeline", ExecAllow: keys(filepath.Join(f.root, "nothing") + "/")}}
	out, stderr, code := f.run(t)
	if code != 3 || out != "script-ran\n" || !strings.Contains(stderr, "Permission denied") {
		t.Errorf("exit %d stdout %q stderr %q", code, out, stderr)
	}
	sh, _ := filepath.EvalSymlinks("/bin/sh")
	if fc := planFacts(t, f); !slices.Contains(fc.LandlockExec, sh) || !strings.HasPrefix(fc.Landlock, "in force") {
		t.Errorf("facts landlock %q exec %q", fc.Landlock, fc.LandlockExec)
	}
}
