package supervise

import (
	"os"
	"path/filepath"
	"sync/atomic"
)

// HelperName is the file name of the small helper binary that serves the
// watchdog and the gate when it is installed beside the running binary.
const HelperName = "warden-supervise"

// helperPath, when set, is re-executed for the helpers instead of the
// running binary. A re-exec pays for every package init of the binary it
// starts; warden's own (gRPC, protobuf, JSON Schema) costs some tens of
// milliseconds, twice per target, which the helper binary, built from
// cmd/warden-supervise with nothing but this package, does not.
var helperPath atomic.Value // string

// UseHelperBeside makes the package re-exec HelperName from the directory
// of the running binary when a regular executable file of that name is
// there, and reports whether it does. Without it, or when the file is
// missing, the running binary itself serves the helpers.
func UseHelperBeside() bool {
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	p := filepath.Join(filepath.Dir(exe), HelperName)
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return false
	}
	helperPath.Store(p)
	return true
}

// helperExe is the binary the helpers run from.
func helperExe() (string, error) {
	if p, ok := helperPath.Load().(string); ok && p != "" {
		return p, nil
	}
	return selfExe()
}
