package supervise

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunThroughHelperBinary runs targets with the gate and the watchdog
// served by the small helper binary (cmd/warden-supervise), as warden does
// when the helper is installed beside it.
func TestRunThroughHelperBinary(t *testing.T) {
	// make test builds the helper into WARDEN_BIN; without it, build it.
	helper := filepath.Join(os.Getenv("WARDEN_BIN"), HelperName)
	if os.Getenv("WARDEN_BIN") == "" {
		helper = filepath.Join(t.TempDir(), HelperName)
		cmd := exec.Command("go", "build", "-o", helper, "../../cmd/warden-supervise")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build the helper: %v\n%s", err, out)
		}
	}
	helperPath.Store(helper)
	defer helperPath.Store("")

	dir := t.TempDir()
	res, err := Run(context.Background(), Spec{
		Path: "/bin/sh", Args: []string{"sh", "-c", "echo $0 via helper"}, Dir: dir,
		StdoutPath: filepath.Join(dir, "out"),
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run through the helper: %+v %v", res, err)
	}
	start := time.Now()
	res, err = Run(context.Background(), Spec{
		Path: "/bin/sh", Args: []string{"sh", "-c", "trap '' TERM; sleep 30"}, Dir: dir,
		Timeout: 200 * time.Millisecond, Grace: 200 * time.Millisecond,
	})
	if err != nil || !res.TimedOut || time.Since(start) > 10*time.Second {
		t.Fatalf("a timeout through the helper: %+v %v after %v", res, err, time.Since(start))
	}
	out, _ := exec.Command(helper).CombinedOutput()
	if !strings.Contains(string(out), "not run by hand") {
		t.Fatalf("the helper run by hand says %q", out)
	}
}
