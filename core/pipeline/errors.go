package pipeline

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/warden-run/warden/core/errdefs"
)

// Error is one problem in a pipeline or policy file.
type Error struct {
	Pos  Pos    // where it was written; Line is 0 for a problem with the whole file
	Path string // the key path, e.g. "target.timeout" or "stages[3].score.plugin"; "" for the top level
	Msg  string // what is wrong and what was expected
	Err  error  // the underlying cause, when there is one (a read error); usually nil
}

// Error renders the problem as `file:line:col: path: message`, leaving out
// the parts that are unknown.
func (e Error) Error() string {
	var b strings.Builder
	b.WriteString(formatPos(e.Pos))
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// MarshalJSON renders the problem for machines (`warden validate --json`):
// {"file", "line", "col", "path", "message"}, line and col 0 when unknown.
func (e Error) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		File    string `json:"file"`
		Line    int    `json:"line"`
		Col     int    `json:"col"`
		Path    string `json:"path"`
		Message string `json:"message"`
	}{e.Pos.File, e.Pos.Line, e.Pos.Col, e.Path, e.Msg})
}

// Unwrap returns the underlying cause, if any.
func (e Error) Unwrap() error { return e.Err }

func formatPos(p Pos) string {
	s := p.File
	if p.Line > 0 {
		s += ":" + strconv.Itoa(p.Line)
		if p.Col > 0 {
			s += ":" + strconv.Itoa(p.Col)
		}
	}
	return s
}

// Errors is every problem found in one or more files, in file order and,
// within a file, in line order. It is an invalid-input error:
// errors.Is(err, errdefs.ErrInvalid) holds and errdefs.Code gives 2.
type Errors struct {
	List []Error
}

// Error prints one line per problem.
func (e *Errors) Error() string {
	lines := make([]string, len(e.List))
	for i, x := range e.List {
		lines[i] = x.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns errdefs.ErrInvalid and the cause of every problem that has
// one, so errors.Is finds both the class and, say, fs.ErrNotExist.
func (e *Errors) Unwrap() []error {
	errs := []error{errdefs.ErrInvalid}
	for _, x := range e.List {
		if x.Err != nil {
			errs = append(errs, x.Err)
		}
	}
	return errs
}

// sortErrors orders the problems of one file by position; problems at the
// same place keep the order they were found in.
func sortErrors(list []Error) {
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i].Pos, list[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// suggest returns the candidate closest to s when it is close enough to be a
// likely typo ("stges" -> "stages", "systempaths" -> "systemPaths"), or "".
// Case is ignored, and a candidate must be within a third of its length
// (at least 1, at most 3 edits) so that unrelated words are not suggested.
func suggest(s string, candidates []string) string {
	best, bestDist := "", 0
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		limit := min(max(len(c)/3, 1), 3)
		if d > limit {
			continue
		}
		if best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance between a and b,
// counted in runes: insertions, deletions, substitutions and transpositions
// of neighbours ("scroe" -> "score") cost 1 each.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	dist := make([][]int, len(ra)+1)
	for i := range dist {
		dist[i] = make([]int, len(rb)+1)
		dist[i][0] = i
	}
	for j := range dist[0] {
		dist[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			dist[i][j] = min(dist[i-1][j]+1, dist[i][j-1]+1, dist[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				dist[i][j] = min(dist[i][j], dist[i-2][j-2]+1)
			}
		}
	}
	return dist[len(ra)][len(rb)]
}

// unknownMsg says that name is not one of valid, with a did-you-mean when one
// is close and the full list otherwise. what is "key" or "stage" etc.
func unknownMsg(what, name string, valid []string) string {
	if s := suggest(name, valid); s != "" {
		return fmt.Sprintf("unknown %s %q (did you mean %q?)", what, name, s)
	}
	return fmt.Sprintf("unknown %s %q (expected one of: %s)", what, name, strings.Join(valid, ", "))
}
