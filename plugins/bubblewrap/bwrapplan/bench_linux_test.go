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
// audit, and reports the times, the plan's share and the ratio. Goals:
// start cost under 15 ms, CPU-bound ratio under 1.05, file-heavy ratio
// under 1.2.
//
//	go test -run '^$' -bench . -benchtime 20x ./plugins/bubblewrap/bwrapplan
//
// The plans run warden-bwrap-shim (built here as `make build` should
// build it) for the Landlock layer, except BenchmarkStartBwrapOnly.

// BenchmarkStartBwrapOnly is a no-op target (/bin/true) under bwrap alone:
// no shim, so no Landlock and no limits.
func BenchmarkStartBwrapOnly(b *testing.B) {
	benchRatio(b, "/bin/true", []string{"true"}, "", false)
}

// BenchmarkStart is the no-op target as Plan runs it on this host: through
// the shim, which enforces a Landlock domain.
func BenchmarkStart(b *testing.B) {
	benchRatio(b, "/bin/true", []string{"true"}, "", true)
}

// BenchmarkStartLimits adds a memory limit.
func BenchmarkStartLimits(b *testing.B) {
	benchRatio(b, "/bin/true", []string{"true"}, `{"memory":"2GiB"}`, true)
}

// BenchmarkCPUBound is a shell loop of about half a second.
func BenchmarkCPUBound(b *testing.B) {
	benchRatio(b, "/bin/sh", []string{"sh", "-c", `i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done`}, "", true)
}

// BenchmarkFileHeavy creates, stats and reads 5,000 small files in the
// workspace (shell built-ins: no fork per file), then removes them.
func BenchmarkFileHeavy(b *testing.B) {
	benchRatio(b, "/bin/sh", []string{"sh", "-c", `mkdir d && cd d || exit 1
i=0; while [ $i -lt 5000 ]; do echo $i > f$i; i=$((i+1)); done
i=0; while [ $i -lt 5000 ]; do [ -f f$i ] && read x < f$i; i=$((i+1)); done
cd .. && rm -rf d`}, "", true)
}

func benchRatio(b *testing.B, path string, argv []string, with string, shim bool) {
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
	plan := func() (*pb.LaunchPlan, error) { return p.Plan(context.Background(), f.spec) }
	if shim {
		s := filepath.Join(b.TempDir(), bwrapshim.Binary)
		if out, err := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", s, "../shim").CombinedOutput(); err != nil {
			b.Skipf("go build ../shim: %v %s", err, out)
		}
		defer func(old func() (string, error)) { shimExe = old }(shimExe)
		shimExe = func() (string, error) { return s, nil }
	} else {
		plan = func() (*pb.LaunchPlan, error) {
			path, err := exec.LookPath("bwrap")
			if err != nil {
				return nil, err
			}
			scan, err := scanSockets("/proc/net/unix", callerCred())
			if err != nil {
				return nil, err
			}
			return buildWith(path, "0.8.0", f.spec, scan, planOpts{landlockWhy: "benchmark of bwrap alone"})
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
		pl, err := plan()
		if err != nil {
			b.Fatal(err)
		}
		planned += time.Since(start)
		boxed += run(pl.GetArgv(), pl.GetEnv(), pl.GetDir())
	}
	boxed += planned
	n := float64(b.N)
	b.ReportMetric(float64(planned.Microseconds())/1e3/n, "plan-ms")
	b.ReportMetric(float64(bare.Microseconds())/1e3/n, "bare-ms")
	b.ReportMetric(float64(boxed.Microseconds())/1e3/n, "bwrap-ms")
	b.ReportMetric(float64(boxed-bare)/float64(time.Millisecond)/n, "added-ms")
	b.ReportMetric(float64(boxed)/float64(bare), "ratio")
}
