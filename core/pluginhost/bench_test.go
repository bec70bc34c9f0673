package pluginhost

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkLaunch measures one plugin's start, handshake and Describe, then
// its end: the fixed cost every stage pays per run. The plugin is this test
// binary (about the size of an in-tree plugin).
func BenchmarkLaunch(b *testing.B) {
	dir := b.TempDir()
	self, _ := os.Executable()
	path := filepath.Join(dir, Prefix+"good")
	if err := os.Link(self, path); err != nil {
		b.Skip("cannot link the test binary:", err)
	}
	var start, kill time.Duration
	for b.Loop() {
		t0 := time.Now()
		p, err := Launch(context.Background(), Options{Name: "good", Path: path, SocketDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		p.Kill()
		start += t1.Sub(t0)
		kill += time.Since(t1)
	}
	b.ReportMetric(float64(start.Milliseconds())/float64(b.N), "start-ms/op")
	b.ReportMetric(float64(kill.Milliseconds())/float64(b.N), "kill-ms/op")
}

// BenchmarkFileSHA256 is the hashing part of a launch.
func BenchmarkFileSHA256(b *testing.B) {
	self, _ := os.Executable()
	for b.Loop() {
		if _, err := FileSHA256(self); err != nil {
			b.Fatal(err)
		}
	}
}
