package score

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/warden-run/warden/core/sdk"
)

// MaxFailing bounds the failing test names listed in DetailsJson.
const MaxFailing = 100

// maxStderrTail bounds the evaluator's stderr quoted in DetailsJson.
const maxStderrTail = 2048

// tally is what a format parser finds in the output.
type tally struct {
	passed, failed, skipped int64
	failing                 []string // names of failing tests, in order
	todo                    []string // TAP TODO tests that failed (not failures)
	problems                []string // why the output cannot pass besides failing tests
	tests                   bool     // the output reported at least one test (or a plan)
}

func (t *tally) fail(name string) {
	t.failed++
	t.failing = append(t.failing, name)
}

// Details is the DetailsJson of a score.
type Details struct {
	Format         string   `json:"format"`
	ExitCode       int      `json:"exitCode"`
	Failing        []string `json:"failing,omitempty"`        // at most MaxFailing names
	FailingOmitted int      `json:"failingOmitted,omitempty"` // names left out of Failing
	Todo           []string `json:"todo,omitempty"`
	Problems       []string `json:"problems,omitempty"`
	StderrTail     string   `json:"stderrTail,omitempty"` // the end of stderr, when not passed
}

// Parse turns an evaluator's output in format into a score. An unknown
// format is ErrInvalidConfig; output that holds no test is a score that
// does not pass, with a summary that says so.
func Parse(format string, stdout, stderr []byte, exitCode int) (*sdk.ScoreResult, error) {
	if format == "" {
		format = FormatExitCode
	}
	var t tally
	switch format {
	case FormatExitCode:
		t.tests = true
		if exitCode == 0 {
			t.passed = 1
		} else {
			t.fail(fmt.Sprintf("evaluator (exit %d)", exitCode))
		}
	case FormatTAP:
		t = parseTAP(stdout)
	case FormatGoTestJSON:
		t = parseGoTestJSON(stdout)
	default:
		return nil, fmt.Errorf("scorer: unknown format %q: want exit-code, tap or go-test-json: %w", format, sdk.ErrInvalidConfig)
	}

	if !t.tests {
		t.problems = append(t.problems, "no tests found in the evaluator's output")
	} else if t.passed == 0 && t.failed == 0 && len(t.problems) == 0 {
		t.problems = append(t.problems, "no test passed: every test was skipped")
	}
	if exitCode != 0 && t.failed == 0 {
		t.problems = append(t.problems, fmt.Sprintf("the evaluator exited %d without a failing test", exitCode))
	}
	pass := exitCode == 0 && t.failed == 0 && t.passed > 0 && len(t.problems) == 0

	d := Details{Format: format, ExitCode: exitCode, Todo: bound(t.todo), Problems: t.problems}
	d.Failing = bound(t.failing)
	d.FailingOmitted = len(t.failing) - len(d.Failing)
	if !pass {
		d.StderrTail = tail(stderr, maxStderrTail)
	}
	details, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return &sdk.ScoreResult{
		Passed: t.passed, Failed: t.failed, Skipped: t.skipped,
		Pass: pass, Summary: summary(t, exitCode), DetailsJson: details,
	}, nil
}

func bound(names []string) []string {
	if len(names) > MaxFailing {
		return names[:MaxFailing]
	}
	return names
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// summary is one line: the counts, the exit code, and the first reasons.
func summary(t tally, exitCode int) string {
	s := fmt.Sprintf("%d passed, %d failed, %d skipped, exit %d", t.passed, t.failed, t.skipped, exitCode)
	if len(t.failing) > 0 {
		s += "; failing: " + strings.Join(first(t.failing, 3), ", ")
		if len(t.failing) > 3 {
			s += fmt.Sprintf(" and %d more", len(t.failing)-3)
		}
	}
	if len(t.problems) > 0 {
		s += "; " + strings.Join(t.problems, "; ")
	}
	return s
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func lines(b []byte) []string {
	ls := strings.Split(string(b), "\n")
	for i, l := range ls {
		ls[i] = strings.TrimSuffix(l, "\r")
	}
	return ls
}

var (
	tapPlan = regexp.MustCompile(`^1\.\.(\d+)\s*(?:#\s*(.*))?$`)
	tapTest = regexp.MustCompile(`^(not ok|ok)(?:\s+|$)(\d+)?\s*(.*)$`)
)

// parseTAP reads TAP 12, 13 and 14 from stdout. Only unindented lines are
// read: indented ones are YAML diagnostics (13) or subtests (14), whose
// outcome their parent's test line carries. A test line with a SKIP
// directive is skipped; a failing one with a TODO directive is not a
// failure. The plan (1..N, first or last) is required, as the TAP
// specification says: tests it promised that never ran count as failed,
// more tests than it promised or no plan at all fail the run, and so
// does "Bail out!".
func parseTAP(stdout []byte) tally {
	var t tally
	plan, planned, seen := -1, "", 0
	for _, line := range lines(stdout) {
		if line == "" || line[0] == ' ' || line[0] == '\t' || line[0] == '#' {
			continue
		}
		if strings.HasPrefix(line, "Bail out!") {
			reason := strings.TrimSpace(strings.TrimPrefix(line, "Bail out!"))
			if reason == "" {
				reason = "no reason given"
			}
			t.problems = append(t.problems, "bailed out: "+reason)
			break
		}
		if m := tapPlan.FindStringSubmatch(line); m != nil {
			if plan >= 0 {
				t.problems = append(t.problems, "more than one plan")
				continue
			}
			n, err := strconv.Atoi(m[1])
			if err != nil {
				t.problems = append(t.problems, "unreadable plan "+strconv.Quote(line))
				continue
			}
			plan, planned = n, m[2]
			t.tests = true
			continue
		}
		m := tapTest.FindStringSubmatch(line)
		if m == nil {
			continue // TAP ignores lines it does not know
		}
		seen++
		t.tests = true
		num := m[2]
		if num == "" {
			num = strconv.Itoa(seen)
		}
		desc, directive := splitDirective(m[3])
		name := num
		if desc != "" {
			name += " " + desc
		}
		upper := strings.ToUpper(directive)
		switch {
		case strings.HasPrefix(upper, "SKIP"):
			t.skipped++
		case strings.HasPrefix(upper, "TODO"):
			if m[1] == "ok" {
				t.passed++
			} else {
				t.skipped++
				t.todo = append(t.todo, name)
			}
		case m[1] == "ok":
			t.passed++
		default:
			t.fail(name)
		}
	}
	switch {
	case plan < 0 && t.tests:
		t.problems = append(t.problems, "no plan (1..N): cannot tell whether every test ran")
	case plan == 0 && seen == 0:
		why := "no tests ran (plan 1..0)"
		if planned != "" {
			why += ": " + planned
		}
		t.problems = append(t.problems, why)
	case seen < plan:
		missing := plan - seen
		t.failed += int64(missing)
		t.failing = append(t.failing, fmt.Sprintf("%d planned tests that never ran", missing))
		t.problems = append(t.problems, fmt.Sprintf("plan 1..%d but %d tests ran", plan, seen))
	case plan >= 0 && seen > plan:
		t.problems = append(t.problems, fmt.Sprintf("plan 1..%d but %d tests ran", plan, seen))
	}
	return t
}

// splitDirective splits a test line's text after the number into its
// description (without a leading "- ") and its directive: the text after
// the first "#" that is not escaped as "\#".
func splitDirective(s string) (desc, directive string) {
	desc = s
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == '#' {
			desc, directive = s[:i], strings.TrimSpace(s[i+1:])
			break
		}
	}
	desc = strings.TrimSpace(desc)
	desc = strings.TrimSpace(strings.TrimPrefix(desc, "-"))
	desc = strings.ReplaceAll(strings.ReplaceAll(desc, `\#`, "#"), `\\`, `\`)
	return desc, directive
}

// testEvent is one line of `go test -json` (cmd/test2json).
type testEvent struct {
	Action      string
	Package     string
	Test        string
	ImportPath  string // build-output and build-fail events (Go 1.24+)
	FailedBuild string // on a package's fail event when its build failed
}

var legacyBuildFail = regexp.MustCompile(`^FAIL\s+(\S+)\s+\[(build failed|setup failed)\]`)

// parseGoTestJSON reads `go test -json` output. Every test and subtest
// with a final pass, fail or skip counts; a test that started and never
// ended (a panic, a timeout) counts as failed; a package that failed with
// no failing test (it did not build, or TestMain failed) counts as one
// failure. Lines that are not JSON are tolerated, but output with no event
// at all is not go test -json.
func parseGoTestJSON(stdout []byte) tally {
	var t tally
	type key struct{ pkg, test string }
	var order []key
	final := map[key]string{}
	pkgFailed := map[string]string{} // package → why
	var pkgOrder []string
	failPkg := func(pkg, why string) {
		if _, ok := pkgFailed[pkg]; !ok {
			pkgOrder = append(pkgOrder, pkg)
			pkgFailed[pkg] = why
		}
	}
	events, other := 0, 0
	var buildFailed []string
	claimed := map[string]bool{} // builds named by a package's FailedBuild
	for _, line := range lines(stdout) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var ev testEvent
		if line[0] != '{' || json.Unmarshal([]byte(line), &ev) != nil || ev.Action == "" {
			if m := legacyBuildFail.FindStringSubmatch(line); m != nil {
				failPkg(m[1], m[2])
			} else {
				other++
			}
			continue
		}
		events++
		switch {
		case ev.Action == "build-fail":
			// The package's own fail event names this build in
			// FailedBuild; a build no package claims counts by itself.
			buildFailed = append(buildFailed, ev.ImportPath)
		case ev.Test == "" && ev.Action == "fail":
			why := "failed with no failing test"
			if ev.FailedBuild != "" {
				why = "build failed"
				claimed[ev.FailedBuild] = true
			}
			failPkg(ev.Package, why)
		case ev.Test == "":
		case ev.Action == "run" || ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip":
			k := key{ev.Package, ev.Test}
			if _, ok := final[k]; !ok {
				order = append(order, k)
			}
			if ev.Action != "run" || final[k] == "" {
				final[k] = ev.Action
			}
		}
	}
	for _, b := range buildFailed {
		if !claimed[b] {
			failPkg(b, "build failed")
		}
	}
	if events == 0 && len(pkgOrder) == 0 && other > 0 {
		t.problems = append(t.problems, fmt.Sprintf("no go test -json events in %d lines of output", other))
	}
	t.tests = len(order) > 0 || len(pkgOrder) > 0
	failedIn := map[string]int{}
	for _, k := range order {
		name := k.test
		if k.pkg != "" {
			name = k.pkg + "." + k.test
		}
		switch final[k] {
		case "pass":
			t.passed++
		case "skip":
			t.skipped++
		case "fail":
			t.fail(name)
			failedIn[k.pkg]++
		default: // "run" and nothing after it
			t.fail(name + " (did not finish)")
			failedIn[k.pkg]++
		}
	}
	for _, pkg := range pkgOrder {
		if failedIn[pkg] == 0 {
			t.fail(fmt.Sprintf("%s (package %s)", pkg, pkgFailed[pkg]))
		}
	}
	return t
}
