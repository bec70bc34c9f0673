package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// explainFixture lays out files of spec 000's worked cases under a temp
// root (a case-sensitive file system) and writes a pipeline whose exec
// grants are allow/deny, plus a policy file when policy is non-empty.
func explainFixture(t *testing.T, files []string, allow, deny []string, policyAllow, policyDeny []string) (dir, pipeline, policy string) {
	t.Helper()
	dir = t.TempDir()
	for _, f := range files {
		write(t, filepath.Join(dir, f), "#!/bin/sh\n")
	}
	keys := func(ks []string) string {
		var q []string
		for _, k := range ks {
			q = append(q, fmt.Sprintf("%q", filepath.Join(dir, k)+map[bool]string{true: "/", false: ""}[strings.HasSuffix(k, "/")]))
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	pipeline = filepath.Join(dir, "p.yaml")
	write(t, pipeline, fmt.Sprintf(`version: 1
name: explain
repo: .
confinement: false
target: {run: [true]}
grants:
  exec:
    allow: %s
    deny: %s
stages:
  - workspace: {plugin: workspace}
  - score: {plugin: scorer}
  - seal: {plugin: seal}
`, keys(allow), keys(deny)))
	if policyAllow != nil {
		policy = filepath.Join(dir, "policy.yaml")
		write(t, policy, fmt.Sprintf("grants:\n  exec:\n    allow: %s\n    deny: %s\n", keys(policyAllow), keys(policyDeny)))
	}
	return dir, pipeline, policy
}

// TestExplainSpecWorkedCases answers every worked case of spec 000 from the
// CLI, exit code and wording included.
func TestExplainSpecWorkedCases(t *testing.T) {
	cases := []struct {
		name                    string
		files                   []string
		allow, deny             []string
		policyAllow, policyDeny []string
		program                 string
		code                    int
		says                    []string
	}{
		{"deeper respelled deny", []string{"x/Tools/evil/t", "x/Tools/good/t", "x/tools/evil/t"},
			[]string{"x/Tools/"}, []string{"x/tools/evil/"}, nil, nil, "x/Tools/evil/t", 1, []string{"verdict:  deny", "respelled"}},
		{"allow beside the respelled deny", []string{"x/Tools/evil/t", "x/Tools/good/t", "x/tools/evil/t"},
			[]string{"x/Tools/"}, []string{"x/tools/evil/"}, nil, nil, "x/Tools/good/t", 0, []string{"verdict:  allow"}},
		{"one rank ties to deny", []string{"x/b/t", "x/B/t"},
			[]string{"x/b/"}, []string{"x/B/"}, nil, nil, "x/b/t", 1, []string{"verdict:  deny"}},
		{"exact over dir", []string{"x/b/tool", "x/B/tool"},
			[]string{"x/b/tool"}, []string{"x/B/"}, nil, nil, "x/b/tool", 0, []string{"verdict:  allow"}},
		{"stack keeps no manufactured deny", []string{"a/B/x", "a/b/x"},
			[]string{"a/B/"}, nil, []string{"a/B/", "a/b/"}, nil, "a/B/x", 0, []string{"verdict:  allow"}},
		{"stacked deny joins", []string{"a/B/x", "a/b/x", "a/c/x"},
			[]string{"a/"}, []string{"a/B/"}, []string{"a/b/", "a/c/"}, nil, "a/b/x", 1, []string{"verdict:  deny", "respelled"}},
		{"stacked allow elsewhere", []string{"a/B/x", "a/b/x", "a/c/x"},
			[]string{"a/"}, []string{"a/B/"}, []string{"a/b/", "a/c/"}, nil, "a/c/x", 0, []string{"verdict:  allow"}},
		{"allows meet by stored name", []string{"a/B/x", "a/b/x"},
			[]string{"a/B/"}, nil, []string{"a/b/"}, nil, "a/B/x", 1, []string{"verdict:  deny"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, p, policy := explainFixture(t, c.files, c.allow, c.deny, c.policyAllow, c.policyDeny)
			// The workspace is a place of its own, so only the grants speak.
			args := []string{"explain", "exec", "-f", p, "--workspace", t.TempDir()}
			if policy != "" {
				args = append(args, "--policy", policy)
			}
			args = append(args, "--", filepath.Join(dir, c.program))
			warden(t, dir, args...).want(t, c.code, c.says...)
		})
	}
}

func TestExplainExecMissingAndOnly(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.yaml")
	write(t, p, `version: 1
name: explain
repo: .
confinement: false
target: {run: [true]}
grants:
  exec:
    allow: ["@system"]
    deny: [curl]
    only: {git: [status, log]}
stages:
  - workspace: {plugin: workspace}
  - score: {plugin: scorer}
  - seal: {plugin: seal}
`)
	write(t, filepath.Join(dir, "notexec"), "")
	must(t, os.Chmod(filepath.Join(dir, "notexec"), 0o644))
	warden(t, dir, "explain", "exec", "-f", p, "--", "no-such-program-xyz").want(t, 127, "not found")
	warden(t, dir, "explain", "exec", "-f", p, "--", "./notexec").want(t, 126, "not an executable")
	warden(t, dir, "explain", "exec", "-f", p, "--", "sh", "-c", "true").want(t, 0, "verdict:  allow", "@system", "p.yaml:8:")
	if _, err := os.Stat("/usr/bin/git"); err == nil {
		warden(t, dir, "explain", "exec", "-f", p, "--", "git", "status").want(t, 0, "only with first argument")
		warden(t, dir, "explain", "exec", "-f", p, "--", "git", "push").want(t, 1, "not admitted with these arguments")
	}
	warden(t, dir, "explain", "exec", "-f", p).want(t, 2)
}

func TestExplainPath(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.yaml")
	granted := filepath.Join(dir, "granted")
	must(t, os.Mkdir(granted, 0o755))
	write(t, p, fmt.Sprintf(`version: 1
name: explain
repo: .
target: {run: [true]}
grants:
  read: [%q]
stages:
  - workspace: {plugin: workspace}
  - confine: {plugin: bubblewrap}
  - audit: {plugin: strace}
  - score: {plugin: scorer}
  - seal: {plugin: seal}
`, granted))
	ws := t.TempDir()
	x := func(args ...string) result {
		return warden(t, dir, append([]string{"explain", "path", "-f", p, "--workspace", ws}, args...)...)
	}
	x("/etc/hostname").want(t, 0, "verdict:  allow")
	x(filepath.Join(granted, "f")).want(t, 0, "verdict:  allow", "grants.read")
	x("--write", filepath.Join(granted, "f")).want(t, 1, "verdict:  deny")
	x("/srv/elsewhere").want(t, 1, "verdict:  deny", "none matched")
	x("--write", filepath.Join(ws, "f")).want(t, 0, "workspace")
	// A stat on the way to a granted place is no finding; reading the
	// directory's entries is.
	x("--op", "lookup", filepath.Dir(granted)).want(t, 0, "verdict:  allow")
	x(filepath.Dir(granted)).want(t, 1, "verdict:  deny")
	x("--op", "frob", "/").want(t, 2, "want read, write")
}
