package supervise

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// The gate receives exactly what warden sends, for any NUL-free strings.
func TestExecMessageRoundTrip(t *testing.T) {
	noNUL := rapid.StringMatching(`[^\x00]*`)
	rapid.Check(t, func(t *rapid.T) {
		path := noNUL.Draw(t, "path")
		argv := rapid.SliceOf(noNUL).Draw(t, "argv")
		env := rapid.SliceOf(noNUL).Draw(t, "env")
		p, a, e, ok := decodeExec(encodeExec(path, argv, env))
		if !ok || p != path || !slices.Equal(a, argv) || !slices.Equal(e, env) {
			t.Fatalf("round trip gave %q %q %q %v", p, a, e, ok)
		}
	})
	for _, bad := range []string{"", "path", "path\x00-1", "path\x003\x00a"} {
		if _, _, _, ok := decodeExec([]byte(bad)); ok {
			t.Errorf("decodeExec(%q) accepted a malformed message", strings.ReplaceAll(bad, "\x00", "|"))
		}
	}
}
