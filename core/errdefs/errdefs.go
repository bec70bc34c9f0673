// Package errdefs defines warden's error classes and maps each to the exit
// code DESIGN.md fixes for it. Every layer wraps its errors with one of these
// classes (fmt.Errorf("...: %w", errdefs.ErrInvalid)), the CLI maps the class
// to an exit code in one place (Code), and the plugin boundary maps classes to
// and from gRPC status codes (see core/sdk).
package errdefs

import (
	"errors"
	"fmt"
)

// Exit codes, DESIGN.md "Exit codes".
const (
	ExitPassed        = 0   // the evaluation passed
	ExitEvalFailed    = 1   // score below its pass rule
	ExitUsage         = 2   // usage error or invalid pipeline
	ExitAccess        = 3   // access outside the grants was observed
	ExitTimeout       = 4   // timeout or structural failure
	ExitPlugin        = 5   // a plugin or runtime fault
	ExitHost          = 12  // the host cannot confine/observe, or integrity failed
	ExitNotExecutable = 126 // the target's program is not executable
	ExitNotFound      = 127 // the target's program was not found
)

// The error classes. Wrap one of these with %w; Code recovers the exit code.
var (
	ErrInvalid         = errors.New("invalid input")                      // 2
	ErrHostUnsupported = errors.New("host cannot confine or observe")     // 12
	ErrIntegrity       = errors.New("integrity check failed")             // 12
	ErrAccessObserved  = errors.New("access outside the grants observed") // 3
	ErrTimeout         = errors.New("timeout or structural failure")      // 4
	ErrPlugin          = errors.New("plugin or runtime fault")            // 5
	ErrEvalFailed      = errors.New("evaluation failed")                  // 1
	ErrNotExecutable   = errors.New("program is not executable")          // 126
	ErrNotFound        = errors.New("program not found")                  // 127
)

var classes = []struct {
	err  error
	code int
}{
	{ErrHostUnsupported, ExitHost},
	{ErrIntegrity, ExitHost},
	{ErrAccessObserved, ExitAccess},
	{ErrPlugin, ExitPlugin},
	{ErrTimeout, ExitTimeout},
	{ErrNotExecutable, ExitNotExecutable},
	{ErrNotFound, ExitNotFound},
	{ErrEvalFailed, ExitEvalFailed},
	{ErrInvalid, ExitUsage},
}

// Code returns the exit code for err: 0 for nil, the code of the
// highest-priority class err wraps (an errors.Join may wrap several), and
// ExitPlugin for an error of no class, since an unclassified failure is a
// fault of warden itself.
func Code(err error) int {
	if err == nil {
		return ExitPassed
	}
	codes := []int{}
	for _, c := range classes {
		if errors.Is(err, c.err) {
			codes = append(codes, c.code)
		}
	}
	if len(codes) == 0 {
		return ExitPlugin
	}
	return Worst(codes...)
}

// priority orders exit codes: DESIGN.md "When several apply, the
// highest-priority one wins: 12, then 3, then 5, 4, 126/127, 1." Usage (2)
// stops a run before any of the others can arise; it ranks just below 12 so
// that an invalid input is never hidden behind a later failure.
var priority = map[int]int{
	ExitHost:          9,
	ExitUsage:         8,
	ExitAccess:        7,
	ExitPlugin:        6,
	ExitTimeout:       5,
	ExitNotExecutable: 4,
	ExitNotFound:      4,
	ExitEvalFailed:    2,
	ExitPassed:        0,
}

// Worst returns the highest-priority exit code among codes (0 when empty).
// An unknown code ranks just above 1 and below 126/127.
func Worst(codes ...int) int {
	best, bestRank := ExitPassed, -1
	for _, c := range codes {
		r, ok := priority[c]
		if !ok {
			r = 3
		}
		if r > bestRank {
			best, bestRank = c, r
		}
	}
	return best
}

// Errorf formats a message like fmt.Errorf (so %w still wraps) and puts it in
// class: Errorf(ErrInvalid, "pipeline %s: %w", path, err).
func Errorf(class error, format string, args ...any) error {
	return &classed{err: fmt.Errorf(format, args...), class: class}
}

type classed struct {
	err   error
	class error
}

func (e *classed) Error() string   { return e.err.Error() }
func (e *classed) Unwrap() []error { return []error{e.err, e.class} }
