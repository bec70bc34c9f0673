package gitcheckout_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/sdk"
	"github.com/warden-run/warden/core/sdk/conformance"
	"github.com/warden-run/warden/plugins/workspace/gitcheckout"
)

// serve runs impl in-process behind go-plugin's real gRPC server and
// returns the connection the core would get from Dispense.
func serve(t *testing.T, impl sdk.Plugin) *sdk.Conn {
	return &sdk.Conn{ClientConn: conformance.Dial(t, impl)}
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@x",
		"GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestServeOverGRPC(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the workspace plugin needs it")
	}
	t.Setenv("HOME", t.TempDir())
	repo := t.TempDir()
	run(t, repo, "init", "-q")
	for p, c := range map[string]string{"main.go": "package main\n", "eval/check.sh": "exit 0\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, repo, "add", "-A")
	run(t, repo, "commit", "-q", "-m", "one")
	id := run(t, repo, "rev-parse", "HEAD")

	conn := serve(t, gitcheckout.New())
	ctx := context.Background()
	desc, err := pb.NewPluginClient(conn.ClientConn).Describe(ctx, &pb.DescribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if desc.GetName() != "workspace" || desc.GetVersion() != "0.1.0" || len(desc.GetStages()) != 1 || desc.GetStages()[0] != pb.Stage_STAGE_WORKSPACE {
		t.Errorf("describe: %v", desc)
	}
	var schema map[string]any
	if err := json.Unmarshal(desc.GetWithSchema(), &schema); err != nil || schema["additionalProperties"] != false {
		t.Errorf("with schema %s: %v", desc.GetWithSchema(), err)
	}
	probe, err := pb.NewPluginClient(conn.ClientConn).Probe(ctx, &pb.ProbeRequest{})
	if err != nil || probe.GetHealth() != pb.ProbeResponse_HEALTH_HEALTHY {
		t.Fatalf("probe: %v %v", probe, err)
	}
	if _, err := pb.NewPluginClient(conn.ClientConn).Configure(ctx, &pb.ConfigureRequest{WithJson: []byte("{}"), PrivateDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}

	dir, evalDir := t.TempDir(), t.TempDir()
	resp, err := pb.NewWorkspaceClient(conn.ClientConn).Build(ctx, &pb.BuildRequest{
		Repo: repo, Commit: "HEAD", Evaluation: "eval", Dir: dir, EvalDir: evalDir,
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetCommit() != id || resp.GetWorkspace() != dir {
		t.Errorf("build: %v", resp)
	}
	if _, err := os.Stat(filepath.Join(dir, "eval")); err == nil {
		t.Error("eval in the workspace")
	}
	if _, err := os.Stat(filepath.Join(evalDir, "check.sh")); err != nil {
		t.Error(err)
	}

	_, err = pb.NewWorkspaceClient(conn.ClientConn).Build(ctx, &pb.BuildRequest{
		Repo: repo, Commit: "v9.9.9", Dir: t.TempDir(), EvalDir: t.TempDir(),
	})
	if err == nil || !strings.Contains(err.Error(), "v9.9.9") {
		t.Errorf("bad commit over gRPC: %v", err)
	}
}
