package pluginhost

import (
	"context"

	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/warden-run/warden/core/errdefs"
	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/sdk"
	"github.com/warden-run/warden/core/supervise"
)

// The test binary doubles as every test plugin: copied to a file named
// warden-plugin-<mode>, it serves the plugin that mode describes (the
// plugin's environment is the core's allowlist, so the mode rides in the
// file name, as a real plugin's name does).
func TestMain(m *testing.M) {
	base := filepath.Base(os.Args[0])
	if mode, ok := strings.CutPrefix(base, Prefix); ok {
		servePluginMode(mode)
		return
	}
	os.Exit(m.Run())
}

type testPlugin struct{ mode string }

func (t testPlugin) Describe() sdk.Description {
	name := t.mode
	if t.mode == "mismatch" {
		name = "someone-else"
	}
	return sdk.Description{Name: name, Version: "1.0.0", Summary: "test plugin " + t.mode}
}

func (t testPlugin) Probe(ctx context.Context, _ *sdk.HostInfo) *sdk.ProbeResponse {
	switch t.mode {
	case "crash":
		os.Exit(3)
	case "hang":
		select {}
	case "panic":
		panic("probe exploded")
	case "orphan":
		// A helper the plugin leaves behind: the group kill must end it.
		cmd := exec.Command("sleep", "1000")
		_ = cmd.Start()
		return sdk.Healthy(strconv.Itoa(cmd.Process.Pid), nil)
	case "sick":
		return sdk.Unhealthy("the frobnicator is disabled: kernel.frob=0", nil)
	}
	return sdk.Healthy("fine", map[string]string{"mode": t.mode})
}

func (t testPlugin) Seal(ctx context.Context, req *sdk.SealRequest) (*sdk.SealResponse, error) {
	if len(req.GetFiles()) == 0 {
		return nil, fmt.Errorf("nothing to seal: %w", sdk.ErrInvalidConfig)
	}
	return &sdk.SealResponse{Files: []*pb.SealedFile{{Path: "n", Data: []byte(strconv.Itoa(len(req.GetFiles())))}}}, nil
}

func servePluginMode(mode string) {
	switch mode {
	case "stdout":
		fmt.Println("hello from a plugin that prints before the handshake")
	case "badproto":
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  sdk.Handshake,
			VersionedPlugins: map[int]plugin.PluginSet{7: sdk.PluginSet(testPlugin{mode})},
			GRPCServer:       plugin.DefaultGRPCServer,
		})
		return
	case "badcookie":
		hs := sdk.Handshake
		hs.MagicCookieValue = "not-the-cookie"
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  hs,
			VersionedPlugins: map[int]plugin.PluginSet{1: sdk.PluginSet(testPlugin{mode})},
			GRPCServer:       plugin.DefaultGRPCServer,
		})
		return
	case "noserve":
		fmt.Fprintln(os.Stderr, "fatal: cannot load my configuration")
		os.Exit(1)
	}
	sdk.Serve(testPlugin{mode})
}

// install places the test binary as warden-plugin-<mode> in dir.
func install(t *testing.T, dir, mode string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, Prefix+mode)
	if err := os.Link(self, dst); err != nil {
		copyFile(t, self, dst)
	}
	return dst
}

func copyFile(t *testing.T, src, dst string) {
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func launch(t *testing.T, mode string, timeout time.Duration) (*Plugin, error) {
	t.Helper()
	dir := t.TempDir()
	path := install(t, dir, mode)
	sock := filepath.Join(dir, "s")
	if err := os.Mkdir(sock, 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := Launch(context.Background(), Options{Name: mode, Path: path, SocketDir: sock, StartTimeout: timeout})
	if p != nil {
		t.Cleanup(p.Kill)
	}
	return p, err
}

func waitGone(t *testing.T, pgid int) {
	t.Helper()
	if pgid <= 0 {
		t.Fatal("no process group recorded")
	}
	deadline := time.Now().Add(5 * time.Second)
	for supervise.GroupAlive(pgid) {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has processes", pgid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLaunchDescribeProbeKill(t *testing.T) {
	p, err := launch(t, "good", 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Desc.GetName() != "good" || p.Desc.GetSdkVersion() != sdk.Version {
		t.Fatalf("description: %v", p.Desc)
	}
	if !p.Serves(pb.Stage_STAGE_SEAL) || p.Serves(pb.Stage_STAGE_CONFINE) {
		t.Fatalf("stages: %v", p.Desc.GetStages())
	}
	if !strings.HasPrefix(p.SHA256, "sha256:") || len(p.SHA256) != 71 {
		t.Fatalf("sha256: %q", p.SHA256)
	}
	ctx := context.Background()
	pr, err := pb.NewPluginClient(p.Conn()).Probe(ctx, &pb.ProbeRequest{})
	if err != nil || pr.GetHealth() != pb.ProbeResponse_HEALTH_HEALTHY || pr.GetFacts()["mode"] != "good" {
		t.Fatalf("probe: %v %v", pr, err)
	}
	// A classed error crosses the boundary with its class.
	_, err = pb.NewSealClient(p.Conn()).Seal(ctx, &pb.SealRequest{})
	err = p.CallError(ctx, "Seal", err)
	if errdefs.Code(err) != errdefs.ExitUsage || !strings.Contains(err.Error(), "nothing to seal") {
		t.Fatalf("classed error: %v (code %d)", err, errdefs.Code(err))
	}
	// A stage the plugin does not serve is Unimplemented.
	_, err = pb.NewConfineClient(p.Conn()).Plan(ctx, &pb.PlanRequest{})
	if !errdefs.IsUnimplemented(err) {
		t.Fatalf("want Unimplemented, got %v", err)
	}
	p.Kill()
	waitGone(t, p.Pgid())
}

func TestPluginEnvironmentIsAllowlisted(t *testing.T) {
	t.Setenv("WARDEN_TEST_SECRET", "hunter2")
	o := Options{SocketDir: "/s", LogLevel: "debug"}
	env := strings.Join(pluginEnv(o), "\n")
	if strings.Contains(env, "hunter2") {
		t.Fatal("a variable outside the allowlist reached the plugin")
	}
	if !strings.Contains(env, "WARDEN_LOG=debug") || !strings.Contains(env, "PLUGIN_UNIX_SOCKET_DIR=/s") {
		t.Fatalf("env: %s", env)
	}
}

func TestLaunchFailures(t *testing.T) {
	cases := []struct {
		mode string
		want string
	}{
		{"stdout", "did not start"},
		{"badproto", "did not start"},
		{"badcookie", "did not start"},
		{"noserve", "cannot load my configuration"},
		{"mismatch", `describes itself as "someone-else"`},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			p, err := launch(t, c.mode, 5*time.Second)
			if err == nil {
				t.Fatal("launch succeeded")
			}
			if errdefs.Code(err) != errdefs.ExitPlugin {
				t.Fatalf("exit code %d for %v", errdefs.Code(err), err)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "plugin "+c.mode) {
				t.Fatalf("error %q does not say %q and name the plugin", err, c.want)
			}
			if p != nil {
				t.Fatal("a failed launch returned a plugin")
			}
		})
	}
}

func TestPinnedChecksum(t *testing.T) {
	dir := t.TempDir()
	path := install(t, dir, "good")
	_, err := Launch(context.Background(), Options{Name: "good", Path: path, SocketDir: dir, SHA256: "sha256:00"})
	if errdefs.Code(err) != errdefs.ExitHost || !strings.Contains(err.Error(), "the pin wants") {
		t.Fatalf("got %v", err)
	}
}

func TestCrashMidCall(t *testing.T) {
	p, err := launch(t, "crash", 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = pb.NewPluginClient(p.Conn()).Probe(ctx, &pb.ProbeRequest{})
	err = p.CallError(ctx, "Probe", err)
	if errdefs.Code(err) != errdefs.ExitPlugin || !strings.Contains(err.Error(), "crashed") {
		t.Fatalf("got %v", err)
	}
	p.Kill()
	waitGone(t, p.Pgid())
}

func TestHangHitsDeadline(t *testing.T) {
	p, err := launch(t, "hang", 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = pb.NewPluginClient(p.Conn()).Probe(ctx, &pb.ProbeRequest{})
	err = p.CallError(ctx, "Probe", err)
	if errdefs.Code(err) != errdefs.ExitPlugin || !strings.Contains(err.Error(), "did not answer in time") {
		t.Fatalf("got %v", err)
	}
	p.Kill()
	waitGone(t, p.Pgid())
}

func TestPanicBecomesInternalError(t *testing.T) {
	p, err := launch(t, "panic", 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = pb.NewPluginClient(p.Conn()).Probe(ctx, &pb.ProbeRequest{})
	err = p.CallError(ctx, "Probe", err)
	if errdefs.Code(err) != errdefs.ExitPlugin || !strings.Contains(err.Error(), "probe exploded") {
		t.Fatalf("got %v", err)
	}
	// The plugin survives its panic.
	d, err := pb.NewPluginClient(p.Conn()).Describe(ctx, &pb.DescribeRequest{})
	if err != nil || d.GetName() != "panic" {
		t.Fatalf("describe after panic: %v %v", d, err)
	}
}

func TestKillEndsPluginHelpers(t *testing.T) {
	p, err := launch(t, "orphan", 0)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := pb.NewPluginClient(p.Conn()).Probe(context.Background(), &pb.ProbeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(pr.GetReason())
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		t.Fatalf("helper not running: %q", pr.GetReason())
	}
	p.Kill()
	waitGone(t, p.Pgid())
	// The helper was reparented and reaped by init, or is a zombie; either
	// way it is not running.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil && !strings.Contains(string(b), ") Z ") {
		t.Fatalf("helper %d survived the plugin: %s", pid, b)
	}
}

func TestDiscoverOrderAndShadowing(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	install(t, a, "good")
	install(t, b, "good")
	install(t, b, "other")
	if err := os.WriteFile(filepath.Join(a, Prefix+"noexec"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a, Prefix+"Bad_Name"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	found, skipped := Discover([]string{a, b})
	if len(found) != 2 || found[0].Name != "good" || found[1].Name != "other" {
		t.Fatalf("found %+v", found)
	}
	if found[0].Path != filepath.Join(a, Prefix+"good") || len(found[0].Shadowed) != 1 || found[0].Shadowed[0] != filepath.Join(b, Prefix+"good") {
		t.Fatalf("first match must win and the second be shadowed: %+v", found[0])
	}
	if len(skipped) != 2 {
		t.Fatalf("skipped %+v", skipped)
	}
	f, err := Find([]string{a, b}, "other")
	if err != nil || f.Path != filepath.Join(b, Prefix+"other") {
		t.Fatalf("find: %+v %v", f, err)
	}
	_, err = Find([]string{a, b}, "missing")
	if err == nil || !strings.Contains(err.Error(), a+":"+b) {
		t.Fatalf("a missing plugin must name the search path: %v", err)
	}
	if _, err := Find([]string{a}, "noexec"); err == nil || !strings.Contains(err.Error(), "not executable") {
		t.Fatalf("got %v", err)
	}
}

func TestSearchPathOrder(t *testing.T) {
	t.Setenv("WARDEN_PLUGIN_PATH", "/one:/two")
	t.Setenv("XDG_DATA_HOME", "/data")
	sp := SearchPath()
	if len(sp) != 4 || sp[0] != "/one" || sp[1] != "/two" || sp[3] != "/data/warden/plugins" {
		t.Fatalf("search path %v", sp)
	}
}
