//go:build !linux && !darwin

package grant

// SystemRoots are this OS's system runtime roots. warden confines only on
// Linux and macOS; elsewhere there are none, and @system expands to the
// layer's systemPaths alone.
var SystemRoots []string

var (
	systemConfig []string
	pseudoReads  []string
	pseudoWrites []string
)

func procAccess(string, Op) (Verdict, string, string, bool) { return Deny, "", "", false }
