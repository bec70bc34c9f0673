package bwrapplan

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/sdk"
)

func TestPlanArgv(t *testing.T) {
	f := newFixture(t, "true")
	plan, err := build("/usr/bin/bwrap", "0.8.0", f.spec, socketScan{})
	if err != nil {
		t.Fatal(err)
	}
	dev := "/dev/" + filepath.Base(f.call)
	want := []string{"/usr/bin/bwrap",
		"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
		"--tmpfs", "/home", "--tmpfs", "/root",
		"--bind", f.call, dev,
		// depth 4 under the test's temp dir: covers before binds
		"--tmpfs", f.home, "--tmpfs", f.priv, "--bind", f.ws, f.ws,
		"--tmpfs", f.gitDir,
		"--remount-ro", "/home", "--remount-ro", "/root", "--remount-ro", f.gitDir, "--remount-ro", f.priv,
		"--chdir", f.ws, "--", "/bin/sh", "-c", "true"}
	if !slices.Equal(plan.GetArgv(), want) {
		t.Errorf("argv\n got %q\nwant %q", plan.GetArgv(), want)
	}
	if plan.GetDir() != f.ws {
		t.Errorf("dir %q", plan.GetDir())
	}
	again, err := build("/usr/bin/bwrap", "0.8.0", f.spec, socketScan{})
	if err != nil || !slices.Equal(again.GetArgv(), plan.GetArgv()) || !slices.Equal(again.GetEnv(), plan.GetEnv()) || string(again.GetFactsJson()) != string(plan.GetFactsJson()) {
		t.Errorf("two plans of one spec differ: %v", err)
	}
	var facts Facts
	if err := json.Unmarshal(plan.GetFactsJson(), &facts); err != nil {
		t.Fatal(err)
	}
	if facts.Bwrap.Version != "0.8.0" || facts.NestedUserns != "disabled" || facts.Network != "none" || !slices.Equal(facts.Covered, []string{f.gitDir, f.priv}) ||
		facts.Home.Path != f.home || !strings.HasPrefix(facts.Exec, "audited only") || len(facts.CallDirs) != 1 || facts.CallDirs[0].Sandbox != dev {
		t.Errorf("facts %s", plan.GetFactsJson())
	}
}

func TestPlanRewritesCallDirsInEnv(t *testing.T) {
	f := newFixture(t, "true")
	f.spec.Env = append(f.spec.Env, "PORT_FILE="+f.call+"/port", "OTHER="+f.call+"x")
	f.spec.Dir = f.call
	plan, err := build("/usr/bin/bwrap", "0.8.0", f.spec, socketScan{})
	if err != nil {
		t.Fatal(err)
	}
	dev := "/dev/" + filepath.Base(f.call)
	want := []string{"PATH=/usr/bin:/bin", "HOME=" + f.home, "TMPDIR=" + dev, "TMP=" + dev, "TEMP=" + dev, "LANG=C",
		"PORT_FILE=" + dev + "/port", "OTHER=" + f.call + "x"}
	if !slices.Equal(plan.GetEnv(), want) {
		t.Errorf("env\n got %q\nwant %q", plan.GetEnv(), want)
	}
	if i := slices.Index(plan.GetArgv(), "--chdir"); i < 0 || plan.GetArgv()[i+1] != dev {
		t.Errorf("the working directory in a call directory is not its sandbox path: %q", plan.GetArgv())
	}
}

func TestPlanRefusesEgress(t *testing.T) {
	f := newFixture(t, "true")
	f.spec.Grants = []*pb.GrantLayer{{Name: "pipeline", Egress: []*pb.GrantKey{{Text: "api.github.com:443", Pos: &pb.Pos{File: "p.yaml", Line: 7, Col: 5}}}}}
	_, err := build("/usr/bin/bwrap", "0.8.0", f.spec, socketScan{})
	if !errors.Is(err, sdk.ErrInvalidConfig) || !strings.Contains(err.Error(), "egress is not supported yet") || !strings.Contains(err.Error(), "p.yaml:7:5") {
		t.Fatalf("egress: %v", err)
	}
}

func TestPlanRefusesBadSpecs(t *testing.T) {
	for name, mutate := range map[string]func(f *fixture){
		"no argv":            func(f *fixture) { f.spec.Argv = nil },
		"relative workspace": func(f *fixture) { f.spec.Workspace = "ws" },
		"home is /":          func(f *fixture) { f.spec.Home = "/" },
		"missing home":       func(f *fixture) { f.spec.Home = f.root + "/nohome" },
		"call dir name":      func(f *fixture) { f.spec.CallDirs[0].Name = "../x" },
		"workspace covered":  func(f *fixture) { f.spec.Cover = append(f.spec.Cover, f.ws) },
		"relative cover":     func(f *fixture) { f.spec.Cover = append(f.spec.Cover, "x") },
		"bad grant key": func(f *fixture) {
			f.spec.Grants = []*pb.GrantLayer{{Name: "pipeline", Read: []*pb.GrantKey{{Text: "rel/path"}}}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "true")
			mutate(f)
			if _, err := build("/usr/bin/bwrap", "0.8.0", f.spec, socketScan{}); !errors.Is(err, sdk.ErrInvalidConfig) {
				t.Fatalf("want ErrInvalidConfig, got %v", err)
			}
		})
	}
}

func TestPlanGrantedPaths(t *testing.T) {
	f := newFixture(t, "true")
	t.Setenv("HOME", f.home) // ~ in grant keys is the invoking user's home
	mod := filepath.Join(f.home, "go", "pkg", "mod")
	cache := filepath.Join(f.root, "cache")
	for _, d := range []string{mod, cache} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.spec.Grants = []*pb.GrantLayer{{Name: "pipeline",
		Read:  []*pb.GrantKey{{Text: "~/go/pkg/mod"}, {Text: "/usr/share"}, {Text: "~/absent"}, {Text: f.priv}},
		Write: []*pb.GrantKey{{Text: cache}, {Text: f.gitDir}},
	}}
	plan, err := build("/usr/bin/bwrap", "0.8.0", f.spec, socketScan{})
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(plan.GetArgv(), " ")
	if !strings.Contains(argv, "--ro-bind-try "+mod+" "+mod) {
		t.Errorf("~/go/pkg/mod is not re-exposed read-only: %s", argv)
	}
	if !strings.Contains(argv, "--bind-try "+cache+" "+cache) {
		t.Errorf("the granted write path is not bound: %s", argv)
	}
	for _, p := range []string{"/usr/share", f.priv + " ", f.gitDir + " " + f.gitDir} {
		if strings.Contains(argv, "-try "+p) {
			t.Errorf("%s is bound: %s", p, argv)
		}
	}
	if i, j := strings.Index(argv, "--tmpfs "+f.home), strings.Index(argv, "--ro-bind-try "+mod); i < 0 || j < i {
		t.Errorf("the re-exposed path is not bound after the private home: %s", argv)
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func TestPlanBeforeDisableUserns(t *testing.T) {
	f := newFixture(t, "true")
	plan, err := build("/usr/bin/bwrap", "0.7.0", f.spec, socketScan{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(plan.GetArgv(), "--disable-userns") || !strings.Contains(string(plan.GetFactsJson()), `"nestedUserns":"allowed: bwrap 0.7.0 has no --disable-userns"`) {
		t.Errorf("bwrap 0.7.0: %q %s", plan.GetArgv(), plan.GetFactsJson())
	}
}
