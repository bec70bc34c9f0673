package bwrapplan

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// escapeBin is testdata/escape, built once for the package's tests in a
// directory every user can reach (the tests also run the sandbox as
// nobody), removed when they end.
var escapeBin string

func TestMain(m *testing.M) {
	MaybeShim() // the plans run this test binary as their shim
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "warden-bwrap-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	escapeBin = filepath.Join(dir, "escape")
	if out, err := exec.Command("go", "build", "-o", escapeBin, "./testdata/escape").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./testdata/escape: %v\n%s", err, out)
		return 1
	}
	// the shim: this test binary, where nobody can reach it too
	self, err := os.Executable()
	if err == nil {
		var b []byte
		if b, err = os.ReadFile(self); err == nil {
			err = os.WriteFile(filepath.Join(dir, "shim"), b, 0o755)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "copying the test binary as the shim:", err)
		return 1
	}
	shimExe = func() (string, error) { return filepath.Join(dir, "shim"), nil }
	return m.Run()
}
