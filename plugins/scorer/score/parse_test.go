package score

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/warden-run/warden/core/sdk"
)

type want struct {
	passed, failed, skipped int64
	pass                    bool
	failing                 []string
	summary                 []string // substrings of the summary
}

func check(t *testing.T, format, stdout string, exit int, w want) {
	t.Helper()
	r, err := Parse(format, []byte(stdout), []byte("some stderr"), exit)
	if err != nil {
		t.Fatal(err)
	}
	if r.GetPassed() != w.passed || r.GetFailed() != w.failed || r.GetSkipped() != w.skipped || r.GetPass() != w.pass {
		t.Errorf("got %d passed %d failed %d skipped pass=%v, want %d %d %d %v (summary %q)",
			r.GetPassed(), r.GetFailed(), r.GetSkipped(), r.GetPass(), w.passed, w.failed, w.skipped, w.pass, r.GetSummary())
	}
	var d Details
	if err := json.Unmarshal(r.GetDetailsJson(), &d); err != nil {
		t.Fatalf("details %s: %v", r.GetDetailsJson(), err)
	}
	if w.failing != nil && !reflect.DeepEqual(d.Failing, w.failing) {
		t.Errorf("failing %q, want %q", d.Failing, w.failing)
	}
	for _, s := range w.summary {
		if !strings.Contains(r.GetSummary(), s) {
			t.Errorf("summary %q does not say %q", r.GetSummary(), s)
		}
	}
	if d.Format != format && !(format == "" && d.Format == FormatExitCode) {
		t.Errorf("details format %q", d.Format)
	}
	if (d.StderrTail != "") == w.pass {
		t.Errorf("stderr tail %q with pass=%v", d.StderrTail, w.pass)
	}
}

func TestExitCode(t *testing.T) {
	check(t, FormatExitCode, "whatever", 0, want{passed: 1, pass: true})
	check(t, "", "", 0, want{passed: 1, pass: true})
	check(t, FormatExitCode, "", 3, want{failed: 1, failing: []string{"evaluator (exit 3)"}, summary: []string{"exit 3"}})
	check(t, FormatExitCode, "", -1, want{failed: 1})
}

func TestTAP(t *testing.T) {
	cases := []struct {
		name, out string
		exit      int
		w         want
	}{
		{"all pass, plan first", "TAP version 13\n1..3\nok 1 - a\nok 2 - b\nok 3 c\n", 0,
			want{passed: 3, pass: true, failing: nil}},
		{"plan last, no numbers", "ok\nok - b\n1..2\n", 0, want{passed: 2, pass: true}},
		{"a failure", "1..3\nok 1 - a\nnot ok 2 - b\nok 3 - c\n", 1,
			want{passed: 2, failed: 1, failing: []string{"2 b"}, summary: []string{"failing: 2 b"}}},
		{"failure but exit 0", "1..2\nok 1\nnot ok 2 - b\n", 0, want{passed: 1, failed: 1}},
		{"skip directive", "1..3\nok 1 - a\nok 2 - b # SKIP no network\nok 3 - c # skipped: slow\n", 0,
			want{passed: 1, skipped: 2, pass: true}},
		{"todo failure is no failure", "1..2\nok 1 - a\nnot ok 2 - b # TODO later\n", 0,
			want{passed: 1, skipped: 1, pass: true}},
		{"todo pass counts", "1..1\nok 1 - a # todo\n", 0, want{passed: 1, pass: true}},
		{"escaped hash is no directive", "1..1\nnot ok 1 - a \\# SKIP not really\n", 1,
			want{failed: 1, failing: []string{"1 a # SKIP not really"}}},
		{"plan mismatch: missing tests fail", "1..4\nok 1\nok 2\n", 0,
			want{passed: 2, failed: 2, summary: []string{"plan 1..4 but 2 tests ran"}}},
		{"plan mismatch: extra tests", "1..1\nok 1\nok 2\n", 0,
			want{passed: 2, summary: []string{"plan 1..1 but 2 tests ran"}}},
		{"no plan", "ok 1\nok 2\n", 0, want{passed: 2, summary: []string{"no plan"}}},
		{"two plans", "1..1\nok 1\n1..1\n", 0, want{passed: 1, summary: []string{"more than one plan"}}},
		{"bail out", "1..3\nok 1\nBail out! database down\nok 2\nok 3\n", 0,
			want{passed: 1, failed: 2, summary: []string{"bailed out: database down"}}},
		{"skip all", "1..0 # SKIP no tests here\n", 0, want{summary: []string{"no tests ran (plan 1..0): SKIP no tests here"}}},
		{"all skipped", "1..2\nok 1 # SKIP\nok 2 # SKIP\n", 0, want{skipped: 2, summary: []string{"every test was skipped"}}},
		{"subtests and yaml are indented", "TAP version 14\n1..2\n# Subtest: s\n    1..2\n    ok 1\n    not ok 2\n" +
			"not ok 1 - s\n  ---\n  message: boom\n  ...\nok 2 - t\n", 1,
			want{passed: 1, failed: 1, failing: []string{"1 s"}}},
		{"CRLF line ends", "1..2\r\nok 1\r\nok 2 - x # SKIP y\r\n", 0, want{passed: 1, skipped: 1, pass: true}},
		{"okay is not ok", "1..1\nokay 1\n", 0, want{failed: 1}},
		{"garbage", "hello\nworld\n", 0, want{summary: []string{"no tests found"}}},
		{"empty output", "", 0, want{summary: []string{"no tests found"}}},
		{"pass but exit 1", "1..1\nok 1\n", 1, want{passed: 1, summary: []string{"exited 1 without a failing test"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, FormatTAP, c.out, c.exit, c.w) })
	}
}

func ev(action, pkg, test string) string {
	b, _ := json.Marshal(map[string]string{"Action": action, "Package": pkg, "Test": test})
	return string(b) + "\n"
}

func TestGoTestJSON(t *testing.T) {
	const p = "example.com/m"
	cases := []struct {
		name, out string
		exit      int
		w         want
	}{
		{"pass", ev("start", p, "") + ev("run", p, "TestA") + ev("output", p, "TestA") + ev("pass", p, "TestA") + ev("pass", p, ""), 0,
			want{passed: 1, pass: true}},
		{"subtests count", ev("run", p, "TestA") + ev("run", p, "TestA/one") + ev("run", p, "TestA/two") +
			ev("pass", p, "TestA/one") + ev("fail", p, "TestA/two") + ev("fail", p, "TestA") + ev("fail", p, ""), 1,
			want{passed: 1, failed: 2, failing: []string{p + ".TestA", p + ".TestA/two"}}},
		{"skip", ev("run", p, "TestA") + ev("skip", p, "TestA") + ev("run", p, "TestB") + ev("pass", p, "TestB") + ev("pass", p, ""), 0,
			want{passed: 1, skipped: 1, pass: true}},
		{"build failure (Go 1.24+)", `{"ImportPath":"example.com/m [example.com/m.test]","Action":"build-output","Output":"x.go:3: undefined: y\n"}` + "\n" +
			`{"ImportPath":"example.com/m [example.com/m.test]","Action":"build-fail"}` + "\n" +
			`{"Action":"start","Package":"example.com/m"}` + "\n" +
			`{"Action":"fail","Package":"example.com/m","Elapsed":0,"FailedBuild":"example.com/m [example.com/m.test]"}` + "\n", 1,
			want{failed: 1, failing: []string{"example.com/m (package build failed)"}}},
		{"build failure no package claims", `{"ImportPath":"example.com/m/tool","Action":"build-fail"}` + "\n" + ev("pass", p, "TestA"), 1,
			want{passed: 1, failed: 1, failing: []string{"example.com/m/tool (package build failed)"}}},
		{"build failure (older Go)", "FAIL\texample.com/m [build failed]\n", 2,
			want{failed: 1, failing: []string{"example.com/m (package build failed)"}}},
		{"package fails with no failing test", ev("run", p, "TestA") + ev("pass", p, "TestA") + ev("fail", p, ""), 1,
			want{passed: 1, failed: 1, failing: []string{p + " (package failed with no failing test)"}}},
		{"test that never ended", ev("run", p, "TestA") + ev("run", p, "TestB") + ev("pass", p, "TestB") + ev("fail", p, ""), 1,
			want{passed: 1, failed: 1, failing: []string{p + ".TestA (did not finish)"}}},
		{"two packages, same test name", ev("pass", p, "TestA") + ev("fail", p+"/sub", "TestA") + ev("fail", p+"/sub", ""), 1,
			want{passed: 1, failed: 1, failing: []string{p + "/sub.TestA"}}},
		{"no test files", ev("start", p, "") + ev("skip", p, ""), 0, want{summary: []string{"no tests found"}}},
		{"garbage", "PASS\nok  example.com/m 0.1s\n", 0, want{summary: []string{"no go test -json events in 2 lines"}}},
		{"empty", "", 0, want{summary: []string{"no tests found"}}},
		{"interleaved noise", "warning: x\n" + ev("pass", p, "TestA") + "{not json\n", 0, want{passed: 1, pass: true}},
		{"pass but exit 1", ev("pass", p, "TestA"), 1, want{passed: 1, summary: []string{"exited 1 without a failing test"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, FormatGoTestJSON, c.out, c.exit, c.w) })
	}
}

func TestFailingIsBounded(t *testing.T) {
	var b strings.Builder
	for i := range MaxFailing + 20 {
		b.WriteString(ev("fail", "m", fmt.Sprintf("Test%03d", i)))
	}
	r, err := Parse(FormatGoTestJSON, []byte(b.String()), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	var d Details
	if err := json.Unmarshal(r.GetDetailsJson(), &d); err != nil {
		t.Fatal(err)
	}
	if r.GetFailed() != MaxFailing+20 || len(d.Failing) != MaxFailing || d.FailingOmitted != 20 {
		t.Errorf("failed %d, listed %d, omitted %d", r.GetFailed(), len(d.Failing), d.FailingOmitted)
	}
	if !strings.Contains(r.GetSummary(), "and 117 more") {
		t.Errorf("summary %q", r.GetSummary())
	}
}

func TestUnknownFormat(t *testing.T) {
	if _, err := Parse("junit", nil, nil, 0); !errors.Is(err, sdk.ErrInvalidConfig) {
		t.Errorf("err %v", err)
	}
}

// TestRealGoTest reads what the real `go test -json` prints for a module
// with passing, failing and skipped subtests, and for one that does not
// build.
func TestRealGoTest(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/real\n\ngo 1.21\n",
		"a_test.go": `package real
import "testing"
func TestA(t *testing.T) {
	t.Run("one", func(t *testing.T) {})
	t.Run("two", func(t *testing.T) { t.Fatal("boom") })
	t.Run("three", func(t *testing.T) { t.Skip("later") })
}
func TestB(t *testing.T) {}
`,
		"broken/b_test.go": "package broken\nimport \"testing\"\nfunc TestX(t *testing.T) { undefined() }\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(goBin, "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	exit := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		exit = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	r, err := Parse(FormatGoTestJSON, []byte(stdout.String()), []byte(stderr.String()), exit)
	if err != nil {
		t.Fatal(err)
	}
	var d Details
	if err := json.Unmarshal(r.GetDetailsJson(), &d); err != nil {
		t.Fatal(err)
	}
	// TestA/one and TestB pass; TestA and TestA/two fail; TestA/three is
	// skipped; the broken package is one failure.
	wantFailing := []string{"example.com/real.TestA", "example.com/real.TestA/two", "example.com/real/broken (package build failed)"}
	if r.GetPassed() != 2 || r.GetFailed() != 3 || r.GetSkipped() != 1 || r.GetPass() || exit == 0 {
		t.Errorf("got %v (exit %d)\nstdout:\n%s\nstderr:\n%s", r, exit, stdout.String(), stderr.String())
	}
	got := slices.Sorted(slices.Values(d.Failing))
	if !reflect.DeepEqual(got, wantFailing) {
		t.Errorf("failing %q, want %q", d.Failing, wantFailing)
	}
}
