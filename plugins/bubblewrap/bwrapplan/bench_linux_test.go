package bwrapplan

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/plugins/bubblewrap/bwrapshim"
)

// The start-cost benchmarks of issue 4: each op runs the target bare and
// then planned (the socket scan included) and run under bwrap, without the
// audit, and reports the times and their ratio. Goals: start cost under
// 15 ms, CPU-bound ratio under 1.05, file-heavy ratio under 1.2.
//
//	go test -run '^$' -bench . -benchtime 20x ./plugins/bubblewrap/bwrapplan

// BenchmarkStart is a no-op target (/bin/true).
func BenchmarkStart(b *testing.B) {
	benchRatio(b, "/bin/true", []string{"true"}, "")
}

// BenchmarkCPUBound is a shell loop of about half a second.
func BenchmarkCPUBound(b *testing.B) {
	benchRatio(b, "/bin/sh", []string{"sh", "-c", `i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done`}, "")
}

// BenchmarkFileHeavy creates, stats and reads 5,000 small files in the
// workspace (shell built-ins: no fork per file), then removes them.
func BenchmarkFileHeavy(b *testing.B) {
	benchRatio(b, "/bin/sh", []string{"sh", "-c", `mkdir d && cd d || exit 1
i=0; while [ $i -lt 5000 ]; do echo $i > f$i; i=$((i+1)); done
i=0; while [ $i -lt 5000 ]; do [ -f f$i ] && read x < f$i; i=$((i+1)); done
cd .. && rm -rf d`}, "")
}

// BenchmarkStartWithShim is the no-op target through warden-bwrap-shim
// (a memory limit set), built here as `make build` builds it.
func BenchmarkStartWithShim(b *testing.B) {
	shim := filepath.Join(b.TempDir(), bwrapshim.Binary)
	if out, err := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", shim, "../shim").CombinedOutput(); err != nil {
		b.Skipf("go build ../shim: %v %s", err, out)
	}
	defer func(old func() (string, error)) { shimExe = old }(shimExe)
	shimExe = func() (string, error) { return shim, nil }
	benchRatio(b, "/bin/true", []string{"true"}, `{"memory":"2GiB"}`)
}

func benchRatio(b *testing.B, path string, argv []string, with string) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bwrap is not installed")
	}
	f := newFixture(b, "")
	f.spec.Path, f.spec.Argv = path, argv
	p := New()
	if with != "" {
		if err := p.Configure(context.Background(), &pb.ConfigureRequest{WithJson: []byte(with)}); err != nil {
			b.Fatal(err)
		}
	}
	run := func(argv []string, env []string, dir string) time.Duration {
		start := time.Now()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env, cmd.Dir = env, dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%q: %v: %s", argv, err, out)
		}
		return time.Since(start)
	}
	var bare, boxed, planned time.Duration
	for b.Loop() {
		bare += run(append([]string{path}, argv[1:]...), f.spec.GetEnv(), f.ws)
		start := time.Now()
		plan, err := p.Plan(context.Background(), f.spec)
		if err != nil {
			b.Fatal(err)
		}
		planned += time.Since(start)
		boxed += run(plan.GetArgv(), plan.GetEnv(), plan.GetDir())
	}
	boxed += planned
	n := float64(b.N)
	b.ReportMetric(float64(planned.Microseconds())/1e3/n, "plan-ms")
	b.ReportMetric(float64(bare.Microseconds())/1e3/n, "bare-ms")
	b.ReportMetric(float64(boxed.Microseconds())/1e3/n, "bwrap-ms")
	b.ReportMetric(float64(boxed-bare)/float64(time.Millisecond)/n, "added-ms")
	b.ReportMetric(float64(boxed)/float64(bare), "ratio")
}
