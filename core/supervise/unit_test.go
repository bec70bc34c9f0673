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
	whole := string(encodeExec("/bin/sh", []string{"sh", "-c", "true"}, []string{"A=1"}))
	for _, bad := range []string{"", "4:path", "7:path\x00-1", "9:path\x003\x00a", whole[:len(whole)-1], whole + "x"} {
		if _, _, _, ok := decodeExec([]byte(bad)); ok {
			t.Errorf("decodeExec(%q) accepted a malformed message", strings.ReplaceAll(bad, "\x00", "|"))
		}
	}
}
