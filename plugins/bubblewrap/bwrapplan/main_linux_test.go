package bwrapplan

import (
	"fmt"
	"github.com/warden-run/warden/plugins/bubblewrap/bwrapshim"
	"os"
	"path/filepath"
	"testing"
)

// helperBin is a copy of this test binary in a directory every user can
// reach (the tests also run the sandbox as nobody), removed when they end:
// the plans' shim, and the tests' sandboxed programs (helpers_linux_test.go).
var helperBin string

func TestMain(m *testing.M) {
	bwrapshim.Main() // the plans run this test binary as their shim
	helperMain()
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
	helperBin = filepath.Join(dir, "helper")
	self, err := os.Executable()
	if err == nil {
		var b []byte
		if b, err = os.ReadFile(self); err == nil {
			err = os.WriteFile(helperBin, b, 0o755)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "copying the test binary:", err)
		return 1
	}
	shimExe = func() (string, error) { return helperBin, nil }
	return m.Run()
}
