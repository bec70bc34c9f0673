package trace_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/core/grant"
	"github.com/warden-run/warden/plugins/strace/trace"
)

// The audited-vs-bare benchmarks run one target bare and under the
// plugin's strace command line, alternately, on the same machine, and
// report the ratio of the medians (x-bare), both medians, the trace's
// lines per run, the time the judge takes over that trace, and the cost
// per traced call ((audited - bare) / lines).
//
//	go test ./plugins/strace/trace -run XXX -bench Audited -benchtime 5x

// auditedVsBare measures argv in dir. prep, when set, runs before every run
// (bare and audited) to reset the target's state.
func auditedVsBare(b *testing.B, dir string, argv []string, env []string, prep func()) {
	st, err := exec.LookPath("strace")
	if err != nil {
		b.Skip("strace is not installed")
	}
	observe(b, dir, argv, env, prep, func(file string) []string { return trace.Argv(st, file, argv) }, true)
}

// stopsOnly is the plugin's strace stopping at the same calls but decoding
// nothing (-e raw=all, no -y/-xx/-s) and writing nowhere: the cost of the
// ptrace stops alone, for the breakdown.
func stopsOnly(b *testing.B, dir string, argv []string, env []string) {
	st, err := exec.LookPath("strace")
	if err != nil {
		b.Skip("strace is not installed")
	}
	observe(b, dir, argv, env, nil, func(string) []string {
		return append([]string{st, "-f", "--seccomp-bpf", "-qq", "-e", "raw=all", "-e", "trace=" + trace.Syscalls, "-o", "/dev/null", "--"}, argv...)
	}, false)
}

func observe(b *testing.B, dir string, argv []string, env []string, prep func(), observer func(file string) []string, judge bool) {
	out := b.TempDir()
	file := filepath.Join(out, "trace")
	run := func(a []string) time.Duration {
		if prep != nil {
			prep()
		}
		cmd := exec.Command(a[0], a[1:]...)
		cmd.Dir, cmd.Env = dir, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("%v: %v\n%s", a, err, stderr.String())
		}
		return time.Since(start)
	}
	// One warm-up of each, so caches are the same for both.
	run(argv)
	run(observer(file))
	var bare, audited, judged []time.Duration
	var lines int64
	tb := benchTable(b, dir)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		// Alternate which goes first, so drift (frequency, the page cache)
		// falls on both.
		if i%2 == 0 {
			bare = append(bare, run(argv))
			audited = append(audited, run(observer(file)))
		} else {
			audited = append(audited, run(observer(file)))
			bare = append(bare, run(argv))
		}
		if !judge {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		j := &trace.Judge{Table: tb.Files, Exec: tb.Exec, Targets: [][]string{argv}, Cwd: dir}
		rep := j.Read(bytes.NewReader(data))
		judged = append(judged, time.Since(start))
		if rep.Error != "" {
			b.Fatalf("trace is no evidence: %s", rep.Error)
		}
		lines = rep.Lines
	}
	mb, ma := median(bare), median(audited)
	b.ReportMetric(float64(ma)/float64(mb), "x-bare")
	b.ReportMetric(ms(mb), "bare-ms")
	b.ReportMetric(ms(ma), "audited-ms")
	if !judge {
		return
	}
	mj := median(judged)
	b.ReportMetric(float64(ma+mj)/float64(mb), "x-bare-judged")
	b.ReportMetric(ms(mj), "judge-ms")
	b.ReportMetric(float64(lines), "lines")
	if lines >= 100 {
		b.ReportMetric(float64(ma-mb)/float64(time.Microsecond)/float64(lines), "us/line")
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func benchTable(b *testing.B, ws string) grant.Table {
	b.Helper()
	l := grant.Layer{Name: "pipeline", Exec: grant.ExecSpec{Allow: []grant.Spec{{Text: "@system"}, {Text: "/usr/local/go/bin/"}}}}
	home, _ := os.UserHomeDir()
	tb, err := grant.Compile(grant.Places{Workspace: ws, PrivateHome: home}, grant.Tools{}, l)
	if err != nil {
		b.Fatal(err)
	}
	return tb
}

// BenchmarkAuditedCPU: a shell loop of builtins, no system calls; the goal
// is under 1.1x (seccomp-bpf stops only at the traced calls).
func BenchmarkAuditedCPU(b *testing.B) {
	auditedVsBare(b, b.TempDir(), []string{"/bin/sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"}, os.Environ(), nil)
}

// BenchmarkAuditedFiles: cat of 5,000 files (an openat and an fstat, which
// glibc makes a newfstatat, each: two traced calls per file). The
// stops-only run is the same strace stopping at the same calls without
// decoding or writing anything: the part of the cost that is the ptrace
// stops themselves.
func BenchmarkAuditedFiles(b *testing.B) {
	dir := b.TempDir()
	for i := range 5000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), []byte("x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	argv := []string{"/bin/sh", "-c", "cat f* >/dev/null"}
	b.Run("audited", func(b *testing.B) { auditedVsBare(b, dir, argv, os.Environ(), nil) })
	b.Run("stops-only", func(b *testing.B) { stopsOnly(b, dir, argv, os.Environ()) })
}

// BenchmarkAuditedGitStatus: git status over a committed 5,000-file
// repository (an lstat per file, threads of the preloaded index).
func BenchmarkAuditedGitStatus(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	dir := b.TempDir()
	for i := range 5000 {
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", i%50))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%04d.txt", i)), []byte(fmt.Sprintf("%d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	env := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b",
		"GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b")
	for _, a := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-q", "-m", "x"}} {
		cmd := exec.Command("git", a...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", a, err, out)
		}
	}
	git, _ := exec.LookPath("git")
	auditedVsBare(b, dir, []string{git, "status", "--porcelain"}, env, nil)
}

// BenchmarkAuditedGoBuild: go build of a small module (two packages, a
// few standard imports) with the build cache warm, the output removed
// before every run so the link runs each time.
func BenchmarkAuditedGoBuild(b *testing.B) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("go is not on PATH")
	}
	dir := b.TempDir()
	files := map[string]string{
		"go.mod":        "module example.com/small\n\ngo 1.22\n",
		"main.go":       "package main\n\nimport (\n\t\"fmt\"\n\t\"example.com/small/lib\"\n)\n\nfunc main() { fmt.Println(lib.Words(\"a b c\")) }\n",
		"lib/lib.go":    "package lib\n\nimport \"strings\"\n\n// Words counts words.\nfunc Words(s string) int { return len(strings.Fields(s)) }\n",
		"lib/extra.go":  "package lib\n\nimport \"encoding/json\"\n\n// JSON encodes v.\nfunc JSON(v any) []byte { b, _ := json.Marshal(v); return b }\n",
		"lib/sorted.go": "package lib\n\nimport \"sort\"\n\n// Sorted sorts s.\nfunc Sorted(s []string) []string { sort.Strings(s); return s }\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	out := filepath.Join(dir, "small")
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOFLAGS=") })
	auditedVsBare(b, dir, []string{gobin, "build", "-o", out, "."}, append(env, "GOFLAGS=-mod=mod"), func() { os.Remove(out) })
}
