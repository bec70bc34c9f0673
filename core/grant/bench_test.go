package grant

import (
	"os"
	"path/filepath"
	"testing"
)

// realisticLayers is a pipeline grant of 50 keys with the host PATH and the
// system roots expanded, and a host policy that restricts it.
func realisticLayers() []Layer {
	pipeline := Layer{Name: "pipeline"}
	for _, n := range []string{"git", "make", "go", "gofmt", "sh", "bash", "env", "cat", "ls", "grep",
		"sed", "awk", "find", "xargs", "tar", "gzip", "python3", "node", "perl", "cc",
		"gcc", "ld", "as", "ar", "diff", "patch", "sort", "uniq", "head", "tail"} {
		pipeline.Exec.Allow = append(pipeline.Exec.Allow, Spec{Text: n})
	}
	for _, n := range []string{"curl", "wget", "ssh", "scp", "nc", "sudo"} {
		pipeline.Exec.Deny = append(pipeline.Exec.Deny, Spec{Text: n})
	}
	for _, p := range []string{"/usr/bin/id", "/usr/bin/true", "/usr/bin/false", "/usr/local/bin/", "/usr/local/go/bin/", "/opt/tools/", "~/bin/", "~/.local/bin/tool", "/usr/sbin/", "/usr/lib/git-core/"} {
		pipeline.Exec.Allow = append(pipeline.Exec.Allow, Spec{Text: p})
	}
	pipeline.Exec.Deny = append(pipeline.Exec.Deny, Spec{Text: "/usr/bin/sudo"}, Spec{Text: "/usr/sbin/"})
	pipeline.Exec.Allow = append(pipeline.Exec.Allow, Spec{Text: "@path"}, Spec{Text: "@system"})
	pipeline.Exec.Only = []OnlySpec{{Key: Spec{Text: "npm"}, Args: []string{"test", "ci"}}}
	pipeline.File.Read = []Spec{{Text: "~/go/pkg/mod"}, {Text: "/usr/local/go"}, {Text: "/opt/tools"}}
	pipeline.File.Write = []Spec{{Text: "/tmp/shared-cache"}}
	pipeline.File.SystemPaths = []Spec{{Text: "/usr/local/go"}}

	policy := Layer{Name: "policy"}
	policy.Exec.Allow = []Spec{{Text: "/"}}
	policy.Exec.Deny = []Spec{{Text: "nc"}, {Text: "/usr/bin/sudo"}}
	policy.File.Read = []Spec{{Text: "/"}}
	policy.File.Write = []Spec{{Text: "/tmp"}}
	return []Layer{pipeline, policy}
}

func benchPlaces(b *testing.B) Places {
	ws := realTemp(b)
	return Places{Workspace: ws, CallDirs: []string{ws + "-call"}, PrivateHome: ws + "-home", Hidden: []string{ws + "-private", ws + "/eval"}}
}

// hostPrograms are the executables of the host's /usr/bin (and the like), as
// programs to judge.
func hostPrograms(b *testing.B) []Program {
	var out []Program
	for _, dir := range []string{"/usr/bin", "/usr/sbin", "/usr/local/bin", "/bin"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if real, ok := executable(p); ok {
				out = append(out, FileProgram(p, real))
			}
		}
	}
	out = append(out, FileProgram("/tmp/x/Curl", "/tmp/x/Curl"), FileProgram("/home/u/.local/bin/tool", "/home/u/.local/bin/tool"))
	if len(out) < 10 {
		b.Skip("the host has too few programs in /usr/bin to judge")
	}
	return out
}

func BenchmarkCompile(b *testing.B) {
	layers, places := realisticLayers(), benchPlaces(b)
	for b.Loop() {
		if _, err := Compile(places, Tools{}, layers...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecVerdict judges 100,000 programs per op (the host's
// executables, round robin) with the stacked realistic table; ns/verdict is
// the figure to read.
func BenchmarkExecVerdict(b *testing.B) {
	tb, err := Compile(benchPlaces(b), Tools{}, realisticLayers()...)
	if err != nil {
		b.Fatal(err)
	}
	progs := hostPrograms(b)
	b.Logf("%d programs, %d exec rules", len(progs), len(tb.Exec.scan))
	const n = 100_000
	for b.Loop() {
		for i := range n {
			tb.Exec.Decide(progs[i%len(progs)])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/verdict")
}

// BenchmarkFileAccess judges 1,000,000 traced accesses per op, a mix an
// ordinary build makes: libraries, config, the workspace, /proc, /sys, /dev,
// and denials.
func BenchmarkFileAccess(b *testing.B) {
	places := benchPlaces(b)
	tb, err := Compile(places, Tools{}, realisticLayers()...)
	if err != nil {
		b.Fatal(err)
	}
	ws := places.Workspace
	type access struct {
		p  string
		op Op
	}
	trace := []access{
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", OpRead},
		{"/etc/ld.so.cache", OpRead},
		{"/etc/nsswitch.conf", OpRead},
		{ws + "/go.mod", OpRead},
		{ws + "/internal/server/Handler.go", OpRead},
		{ws + "/bin/app", OpWrite},
		{ws + "/eval/hidden_test.go", OpRead},
		{"/proc/self/status", OpRead},
		{"/proc/self/fd/7", OpRead},
		{"/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", OpRead},
		{"/dev/null", OpWrite},
		{"/usr/local/go/src/runtime/proc.go", OpRead},
		{"/home/user/.ssh/id_ed25519", OpRead},
		{"/tmp/shared-cache/x", OpWrite},
		{"/var/lib/secret", OpWrite},
		{"/usr/share/zoneinfo/Europe/Paris", OpRead},
	}
	const n = 1_000_000
	for b.Loop() {
		for i := range n {
			a := trace[i%len(trace)]
			tb.Access(a.p, a.op)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/access")
}
