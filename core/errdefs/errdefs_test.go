package errdefs

import (
	"errors"
	"fmt"
	"testing"
)

func TestCodeOfEachClass(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{ErrInvalid, 2},
		{ErrHostUnsupported, 12},
		{ErrIntegrity, 12},
		{ErrAccessObserved, 3},
		{ErrTimeout, 4},
		{ErrPlugin, 5},
		{ErrEvalFailed, 1},
		{ErrNotExecutable, 126},
		{ErrNotFound, 127},
		{errors.New("unclassed"), 5},
		{fmt.Errorf("wrapped: %w", ErrInvalid), 2},
		{Errorf(ErrHostUnsupported, "no userns: %w", errors.New("EPERM")), 12},
	}
	for _, c := range cases {
		if got := Code(c.err); got != c.want {
			t.Errorf("Code(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// DESIGN.md: "When several apply, the highest-priority one wins: 12, then
// 3, then 5, 4, 126/127, 1."
func TestPrecedence(t *testing.T) {
	order := []int{12, 3, 5, 4, 127, 1, 0}
	for i, hi := range order {
		for _, lo := range order[i+1:] {
			if got := Worst(lo, hi); got != hi {
				t.Errorf("Worst(%d, %d) = %d, want %d", lo, hi, got, hi)
			}
		}
	}
	joined := errors.Join(Errorf(ErrEvalFailed, "score"), Errorf(ErrAccessObserved, "read"), Errorf(ErrTimeout, "slow"))
	if Code(joined) != 3 {
		t.Errorf("Code of a joined error = %d, want 3", Code(joined))
	}
}

func TestErrorfKeepsWrappedErrors(t *testing.T) {
	inner := errors.New("inner")
	err := Errorf(ErrPlugin, "outer: %w", inner)
	if !errors.Is(err, inner) || !errors.Is(err, ErrPlugin) || err.Error() != "outer: inner" {
		t.Fatalf("Errorf lost something: %v", err)
	}
}

func TestGRPCRoundTrip(t *testing.T) {
	for _, class := range []error{ErrInvalid, ErrHostUnsupported, ErrIntegrity, ErrAccessObserved, ErrTimeout, ErrNotFound, ErrNotExecutable, ErrEvalFailed, ErrPlugin} {
		back := FromGRPC(ToGRPC(Errorf(class, "it broke")))
		if !errors.Is(back, class) || back.Error() != "it broke" {
			t.Errorf("%v did not survive the round trip: %v", class, back)
		}
	}
	if Code(FromGRPC(errors.New("not a status"))) != ExitPlugin {
		t.Error("a non-status error from a plugin must be a plugin fault")
	}
	if ToGRPC(nil) != nil || FromGRPC(nil) != nil {
		t.Error("nil must stay nil")
	}
}
