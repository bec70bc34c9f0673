//go:build race

package supervise

// Under the race detector a helper's exit would sleep one second for late
// reports (GORACE atexit_sleep_ms), and every Release would wait for it.
func init() { helperEnv = append(helperEnv, "GORACE=atexit_sleep_ms=0") }
