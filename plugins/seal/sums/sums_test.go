package sums

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/sdk"
)

func digest(b string) string {
	s := sha256.Sum256([]byte(b))
	return hex.EncodeToString(s[:])
}

func seal(t *testing.T, files map[string]string, runJSON string) *sdk.SealResponse {
	t.Helper()
	req := &sdk.SealRequest{InvocationId: "inv-1", RunJson: []byte(runJSON)}
	for p, content := range files {
		req.Files = append(req.Files, &pb.FileDigest{Path: p, Sha256: "sha256:" + digest(content)})
	}
	r, err := New().Seal(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSealFormat(t *testing.T) {
	files := map[string]string{
		"trials/0/stdout": "hello\n",
		"score.json":      `{"pass":true}`,
		"a b.txt":         "spaces are fine",
		"Z":               "upper case sorts first",
	}
	run := `{"schema":"warden.run/v1"}`
	r := seal(t, files, run)
	if len(r.GetFiles()) != 1 || r.GetFiles()[0].GetPath() != "SHA256SUMS" {
		t.Fatalf("files %v", r.GetFiles())
	}
	want := digest(files["Z"]) + "  Z\n" +
		digest(files["a b.txt"]) + "  a b.txt\n" +
		digest(run) + "  run.json\n" +
		digest(files["score.json"]) + "  score.json\n" +
		digest(files["trials/0/stdout"]) + "  trials/0/stdout\n"
	if got := string(r.GetFiles()[0].GetData()); got != want {
		t.Errorf("SHA256SUMS:\n%s\nwant:\n%s", got, want)
	}
	var f facts
	if err := json.Unmarshal(r.GetFactsJson(), &f); err != nil || f.Files != 5 || f.Sums != "SHA256SUMS" {
		t.Errorf("facts %s: %v", r.GetFactsJson(), err)
	}
}

// TestSha256sumChecks writes the files and the seal to a directory and has
// the real sha256sum check them, then changes one byte and expects it to
// fail.
func TestSha256sumChecks(t *testing.T) {
	bin, err := exec.LookPath("sha256sum")
	if err != nil {
		t.Skip("sha256sum is not installed")
	}
	dir := t.TempDir()
	files := map[string]string{"score.json": "{}", "trials/0/stderr": "", "trials/0/stdout": "out\n"}
	run := `{"status":"completed"}`
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte(run), 0o644); err != nil {
		t.Fatal(err)
	}
	r := seal(t, files, run)
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), r.GetFiles()[0].GetData(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--strict", "-c", "SHA256SUMS")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "score.json"), []byte("{ }"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(bin, "--strict", "-c", "SHA256SUMS")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("sha256sum -c passed a changed file:\n%s", out)
	}
}

func TestRunJSON(t *testing.T) {
	run := `{"x":1}`
	ctx := context.Background()
	// Listed by the core with the same digest: one line, not two.
	r, err := New().Seal(ctx, &sdk.SealRequest{RunJson: []byte(run), Files: []*pb.FileDigest{{Path: "run.json", Sha256: "sha256:" + digest(run)}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r.GetFiles()[0].GetData()); got != digest(run)+"  run.json\n" {
		t.Errorf("SHA256SUMS %q", got)
	}
	// Listed with other bytes than those sent.
	_, err = New().Seal(ctx, &sdk.SealRequest{RunJson: []byte(run), Files: []*pb.FileDigest{{Path: "run.json", Sha256: "sha256:" + digest("other")}}})
	if !errors.Is(err, sdk.ErrIntegrity) {
		t.Errorf("mismatched run.json: %v", err)
	}
	// Listed, bytes not sent: the listing stands.
	if _, err := New().Seal(ctx, &sdk.SealRequest{Files: []*pb.FileDigest{{Path: "run.json", Sha256: "sha256:" + digest(run)}}}); err != nil {
		t.Errorf("listed run.json without bytes: %v", err)
	}
	// Neither.
	if _, err := New().Seal(ctx, &sdk.SealRequest{Files: []*pb.FileDigest{{Path: "a", Sha256: "sha256:" + digest("a")}}}); !errors.Is(err, sdk.ErrInvalidConfig) {
		t.Errorf("no run.json: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	good := "sha256:" + digest("x")
	cases := []struct {
		path, sum string
		class     error
	}{
		{"/etc/passwd", good, sdk.ErrInvalidConfig},
		{"../outside", good, sdk.ErrInvalidConfig},
		{"a/../../b", good, sdk.ErrInvalidConfig},
		{"a/..", good, sdk.ErrInvalidConfig},
		{"..", good, sdk.ErrInvalidConfig},
		{"", good, sdk.ErrInvalidConfig},
		{".", good, sdk.ErrInvalidConfig},
		{"a//b", good, sdk.ErrInvalidConfig},
		{"./a", good, sdk.ErrInvalidConfig},
		{"a/", good, sdk.ErrInvalidConfig},
		{"a\nb", good, sdk.ErrInvalidConfig},
		{"a\\b", good, sdk.ErrInvalidConfig},
		{"a", digest("x"), sdk.ErrInvalidConfig},                  // no prefix
		{"a", "sha256:" + digest("x")[:10], sdk.ErrInvalidConfig}, // short
		{"a", "sha256:" + strings.Repeat("g", 64), sdk.ErrInvalidConfig},
		{"a", "md5:" + digest("x"), sdk.ErrInvalidConfig},
	}
	for _, c := range cases {
		_, err := New().Seal(context.Background(), &sdk.SealRequest{RunJson: []byte("{}"), Files: []*pb.FileDigest{{Path: c.path, Sha256: c.sum}}})
		if !errors.Is(err, c.class) {
			t.Errorf("path %q sum %q: err %v, want %v", c.path, c.sum, err, c.class)
		} else if c.path != "" && !strings.Contains(err.Error(), strconv.Quote(c.path)) && !strings.Contains(err.Error(), strconv.Quote(c.sum)) {
			t.Errorf("error %q names neither the path nor the digest", err)
		}
	}
	// The same file twice: fine with one digest, refused with two.
	files := []*pb.FileDigest{{Path: "a", Sha256: good}, {Path: "a", Sha256: good}}
	if _, err := New().Seal(context.Background(), &sdk.SealRequest{RunJson: []byte("{}"), Files: files}); err != nil {
		t.Errorf("a file listed twice alike: %v", err)
	}
	files[1].Sha256 = "sha256:" + digest("y")
	if _, err := New().Seal(context.Background(), &sdk.SealRequest{RunJson: []byte("{}"), Files: files}); !errors.Is(err, sdk.ErrIntegrity) {
		t.Errorf("a file listed twice with two digests: %v", err)
	}
	// Names with dots that do not climb are fine.
	for _, p := range []string{"a..b", "..a", "a/.hidden", "v1.2/x..y"} {
		if err := checkPath(p); err != nil {
			t.Errorf("checkPath(%q) = %v", p, err)
		}
	}
}

func TestConfigure(t *testing.T) {
	for _, w := range []string{"", "{}"} {
		if err := New().Configure(context.Background(), &sdk.ConfigureRequest{WithJson: []byte(w)}); err != nil {
			t.Errorf("Configure(%q): %v", w, err)
		}
	}
	if err := New().Configure(context.Background(), &sdk.ConfigureRequest{WithJson: []byte(`{"key":"x"}`)}); !errors.Is(err, sdk.ErrInvalidConfig) {
		t.Errorf("Configure with a key: %v", err)
	}
}
