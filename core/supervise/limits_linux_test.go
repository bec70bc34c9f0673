package supervise

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMemoryLimitKillsTheTree: two processes, each under the limit, whose
// sum exceeds it; supervision kills the group and names the limit (exit 4).
func TestMemoryLimitKillsTheTree(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is needed to hold memory resident")
	}
	dir := t.TempDir()
	hog := `import time; b = bytearray(40 << 20); b[::4096] = b"x" * len(b[::4096]); time.sleep(30)`
	start := time.Now()
	res, err := Run(context.Background(), Spec{
		Path: "/bin/sh", Args: []string{"sh", "-c", "python3 -c '" + hog + "' & python3 -c '" + hog + "'; wait"},
		Dir: dir, MemoryLimit: 60 << 20, Timeout: 20 * time.Second,
		StdoutPath: filepath.Join(dir, "out"), StderrPath: filepath.Join(dir, "err"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.LimitExceeded, "memory limit: ") || res.TimedOut {
		t.Fatalf("want the memory limit exceeded, got %+v", res)
	}
	if time.Since(start) > 15*time.Second {
		t.Fatalf("the limit took %v to act", time.Since(start))
	}
	if e := res.Err(); e == nil || !strings.Contains(e.Error(), "exceeded its memory limit") {
		t.Fatalf("Err: %v", e)
	}
	// Under the limit nothing happens.
	res, err = Run(context.Background(), Spec{
		Path: "/bin/sh", Args: []string{"sh", "-c", "python3 -c 'b = bytearray(8 << 20)'"}, Dir: dir, MemoryLimit: 200 << 20,
	})
	if err != nil || res.LimitExceeded != "" || res.ExitCode != 0 {
		t.Fatalf("a target under its limit: %+v %v", res, err)
	}
}

func TestParseStatRSS(t *testing.T) {
	line := []byte("42 (a ) b) S 7 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 100 1000000 321 18446744073709551615")
	ppid, rss, ok := parseStatRSS(line)
	if !ok || ppid != 7 || rss != 321 {
		t.Fatalf("parseStatRSS = %d %d %v", ppid, rss, ok)
	}
	if _, _, ok := parseStatRSS([]byte("garbage")); ok {
		t.Fatal("garbage parsed")
	}
}
