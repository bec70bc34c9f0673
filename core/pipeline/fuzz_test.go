package pipeline

import (
	"errors"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, and that it returns
// either a pipeline or an *Errors with at least one problem, never both.
func FuzzParse(f *testing.F) {
	f.Add(designExample)
	for _, src := range validFiles {
		f.Add(src)
	}
	for _, c := range invalidFiles {
		f.Add(c.src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Parse("f.yaml", []byte(src))
		if err == nil {
			if p == nil || len(p.Stages) == 0 || p.Version != 1 {
				t.Fatalf("accepted without a usable pipeline: %+v", p)
			}
			return
		}
		var es *Errors
		if p != nil || !errors.As(err, &es) || len(es.List) == 0 {
			t.Fatalf("p = %v, err = %#v", p, err)
		}
	})
}
