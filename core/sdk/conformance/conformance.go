// Package conformance checks a plugin binary against warden's plugin
// contract, the way containerd's snapshotter suite checks a snapshotter. A
// plugin's own test runs it in one line:
//
//	func TestConformance(t *testing.T) {
//		bin := conformance.Build(t, ".")          // go build of the plugin's main package
//		conformance.Run(t, bin, conformance.Options{With: `{"run":["true"]}`})
//	}
//
// Run launches the binary as the core does (handshake, AutoMTLS, the
// environment allowlist, its own process group) and checks, each as a
// subtest: that it refuses to run by hand, that Describe is static and
// honest (name equals file name, semver, protocol 1, a JSON Schema that
// compiles), that Probe answers with a reason when it is not healthy, that
// Configure takes the `with:` block, that every stage it serves answers a
// sample call within the contract (plans are deterministic and go through
// no shell, seal files are plain relative names), that an unknown stage is
// Unimplemented, and that nothing of the plugin survives its end.
package conformance

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/proto"

	"github.com/warden-run/warden/core/errdefs"
	"github.com/warden-run/warden/core/pluginhost"
	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/supervise"
)

// Options tune the checks for one plugin.
type Options struct {
	// With is the `with:` block handed to Configure, as JSON ("{}" if empty).
	With string
	// Spec is the launch spec used for confine and audit calls; nil uses a
	// sample one running /bin/true in a temp workspace.
	Spec *pb.LaunchSpec
	// SkipStageCalls skips the sample stage calls (for a plugin whose stage
	// needs host state the test cannot make).
	SkipStageCalls bool
}

// Build compiles the main package at pkg (a directory or import path) into
// a binary named warden-plugin-<base of pkg> in a temp directory and
// returns its path.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	abs, err := filepath.Abs(pkg)
	if err != nil {
		t.Fatal(err)
	}
	name := pluginhost.Prefix + filepath.Base(abs)
	out := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = abs
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// Run checks the plugin binary at path against the contract.
func Run(t *testing.T, path string, o Options) {
	t.Helper()
	name, ok := strings.CutPrefix(filepath.Base(path), pluginhost.Prefix)
	if !ok {
		t.Fatalf("%s: a plugin binary must be named %s<name>", path, pluginhost.Prefix)
	}
	if o.With == "" {
		o.With = "{}"
	}
	ctx := context.Background()

	t.Run("refuses to run by hand", func(t *testing.T) {
		cmd := exec.Command(path)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		err := cmd.Run()
		if err == nil {
			t.Fatal("the plugin exited 0 when run without the core's handshake")
		}
		if stdout.Len() != 0 {
			t.Fatalf("the plugin wrote to stdout when run by hand: %q", stdout.String())
		}
	})

	sock := t.TempDir()
	p, err := pluginhost.Launch(ctx, pluginhost.Options{Name: name, Path: path, SocketDir: sock})
	if err != nil {
		t.Fatalf("launch as the core does: %v", err)
	}
	pgid := p.Pgid()
	defer func() {
		p.Kill()
		deadline := time.Now().Add(5 * time.Second)
		for supervise.GroupAlive(pgid) {
			if time.Now().After(deadline) {
				t.Errorf("processes of the plugin's group %d survived its end", pgid)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	pc := pb.NewPluginClient(p.Conn())

	t.Run("describe is static and honest", func(t *testing.T) {
		d2, err := pc.Describe(ctx, &pb.DescribeRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(p.Desc, d2) {
			t.Fatalf("two Describe calls differ:\n%v\n%v", p.Desc, d2)
		}
		if p.Desc.GetSummary() == "" {
			t.Error("Describe has no summary for `warden plugins`")
		}
		if s := p.Desc.GetWithSchema(); len(s) > 0 {
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(s))
			if err != nil {
				t.Fatalf("with_schema is not JSON: %v", err)
			}
			c := jsonschema.NewCompiler()
			c.DefaultDraft(jsonschema.Draft7)
			if err := c.AddResource("warden:/with.json", doc); err != nil {
				t.Fatal(err)
			}
			sch, err := c.Compile("warden:/with.json")
			if err != nil {
				t.Fatalf("with_schema does not compile: %v", err)
			}
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(o.With))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(inst); err != nil {
				t.Fatalf("the test's with block does not satisfy the plugin's own schema: %v", err)
			}
		}
	})

	home, _ := os.UserHomeDir()
	host := &pb.HostInfo{Goos: runtime.GOOS, Goarch: runtime.GOARCH, Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()), Home: home}
	healthy := false
	t.Run("probe answers", func(t *testing.T) {
		pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		pr, err := pc.Probe(pctx, &pb.ProbeRequest{Host: host})
		if err != nil {
			t.Fatal(p.CallError(pctx, "Probe", err))
		}
		healthy = pr.GetHealth() == pb.ProbeResponse_HEALTH_HEALTHY
		if !healthy && pr.GetReason() == "" {
			t.Fatalf("probe says %v without a reason", pr.GetHealth())
		}
		if !healthy {
			t.Logf("the plugin is not healthy here: %s", pr.GetReason())
		}
	})

	t.Run("configure takes the with block", func(t *testing.T) {
		_, err := pc.Configure(ctx, &pb.ConfigureRequest{WithJson: []byte(o.With), PrivateDir: t.TempDir(), Host: host})
		if err != nil {
			t.Fatal(p.CallError(ctx, "Configure", err))
		}
	})

	t.Run("unserved stages are unimplemented", func(t *testing.T) {
		if !p.Serves(pb.Stage_STAGE_SEAL) {
			_, err := pb.NewSealClient(p.Conn()).Seal(ctx, &pb.SealRequest{})
			if !errdefs.IsUnimplemented(err) {
				t.Fatalf("Seal on a plugin that does not seal: want Unimplemented, got %v", err)
			}
		}
		if !p.Serves(pb.Stage_STAGE_CONFINE) {
			_, err := pb.NewConfineClient(p.Conn()).Plan(ctx, &pb.PlanRequest{})
			if !errdefs.IsUnimplemented(err) {
				t.Fatalf("Plan on a plugin that does not confine: want Unimplemented, got %v", err)
			}
		}
	})

	if o.SkipStageCalls || !healthy {
		return
	}
	spec := o.Spec
	if spec == nil {
		ws := t.TempDir()
		spec = &pb.LaunchSpec{Argv: []string{"true"}, Path: "/bin/true", Env: []string{"PATH=/usr/bin:/bin"},
			Dir: ws, Workspace: ws, Home: home, Trial: 1, Uid: host.Uid, Gid: host.Gid}
	}
	if p.Serves(pb.Stage_STAGE_CONFINE) {
		t.Run("confine plans deterministically without a shell", func(t *testing.T) {
			c := pb.NewConfineClient(p.Conn())
			a, err := c.Plan(ctx, &pb.PlanRequest{Spec: spec})
			if err != nil {
				t.Fatal(p.CallError(ctx, "Plan", err))
			}
			b, err := c.Plan(ctx, &pb.PlanRequest{Spec: spec})
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(a.GetPlan(), b.GetPlan()) {
				t.Fatalf("two plans for one spec differ")
			}
			checkNoShell(t, a.GetPlan().GetArgv())
		})
	}
	if p.Serves(pb.Stage_STAGE_AUDIT) {
		t.Run("audit wraps and names its trace files", func(t *testing.T) {
			dir := t.TempDir()
			plan := &pb.LaunchPlan{Argv: spec.GetArgv(), Env: spec.GetEnv(), Dir: spec.GetDir()}
			w, err := pb.NewAuditClient(p.Conn()).Wrap(ctx, &pb.WrapRequest{Spec: spec, Plan: plan, TraceDir: dir})
			if err != nil {
				t.Fatal(p.CallError(ctx, "Wrap", err))
			}
			checkNoShell(t, w.GetPlan().GetArgv())
			for _, f := range w.GetTraceFiles() {
				if filepath.Dir(f) != dir && !strings.HasPrefix(f, dir+"/") {
					t.Fatalf("trace file %s is outside the trace directory %s", f, dir)
				}
			}
		})
	}
	if p.Serves(pb.Stage_STAGE_SEAL) {
		t.Run("seal returns plain relative files", func(t *testing.T) {
			res, err := pb.NewSealClient(p.Conn()).Seal(ctx, &pb.SealRequest{InvocationId: "conformance",
				Files:   []*pb.FileDigest{{Path: "trials/1/stdout", Sha256: "sha256:" + strings.Repeat("0", 64)}},
				RunJson: []byte(`{"schema":"conformance"}`)})
			if err != nil {
				t.Fatal(p.CallError(ctx, "Seal", err))
			}
			if len(res.GetFiles()) == 0 {
				t.Fatal("seal returned no file")
			}
			for _, f := range res.GetFiles() {
				if f.GetPath() == "" || filepath.IsAbs(f.GetPath()) || filepath.Clean(f.GetPath()) != f.GetPath() || strings.HasPrefix(f.GetPath(), "..") {
					t.Fatalf("seal file name %q is not a plain relative name", f.GetPath())
				}
			}
		})
	}
	if p.Serves(pb.Stage_STAGE_SCORE) {
		t.Run("score plans a command", func(t *testing.T) {
			res, err := pb.NewScoreClient(p.Conn()).Plan(ctx, &pb.ScorePlanRequest{Workspace: spec.GetWorkspace()})
			if err != nil {
				t.Fatal(p.CallError(ctx, "Score.Plan", err))
			}
			if len(res.GetPlan().GetArgv()) == 0 || res.GetFormat() == "" {
				t.Fatalf("score plan %v has no command or no format", res)
			}
		})
	}
}

func checkNoShell(t *testing.T, argv []string) {
	t.Helper()
	if len(argv) == 0 {
		t.Fatal("empty argv")
	}
	switch filepath.Base(argv[0]) {
	case "sh", "bash", "dash", "zsh":
		t.Fatalf("the plan starts with a shell: %q", argv)
	}
}
