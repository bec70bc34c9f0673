// Package trace reads the output of `strace -f -q -xx -y -X raw` (the command
// line Argv builds) and judges every traced access against a grant table.
//
// The format is chosen so that no file name can make a line ambiguous: with
// -xx every string, and with -y every decoded descriptor path, is printed as
// \xNN escapes, so a name's newlines, quotes, brackets and invalid UTF-8
// never reach the line as themselves. The parser still decodes every C escape
// strace can print, so a trace without -xx parses too.
package trace

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind says what a trace line is.
type Kind uint8

const (
	KindCall       Kind = iota // name(args) = ret
	KindUnfinished             // name(args <unfinished ...>
	KindResumed                // <... name resumed>args) = ret
	KindSignal                 // --- SIGCHLD {...} ---
	KindExited                 // +++ exited with N +++
	KindKilled                 // +++ killed by SIGKILL +++
	// KindPidChanged is an execve a non-leader thread made: it succeeded,
	// and the thread carries on as the leader's pid (Code):
	// name(args <pid changed to N ...>
	KindPidChanged
	// KindSuperseded ends a thread group's leader whose pid a thread's
	// execve took over (Code is that thread's pid):
	// +++ superseded by execve in pid N +++
	KindSuperseded
)

// Line is one parsed line of the trace.
type Line struct {
	Pid  int
	Kind Kind
	Name string // the syscall; the signal for KindSignal and KindKilled
	// Args is the raw text of the arguments: for KindUnfinished what was
	// printed before the call blocked, for KindResumed what follows
	// "resumed>" up to the closing parenthesis.
	Args  string
	Ret   string // the raw text after " = " (KindCall, KindResumed)
	Code  int    // the exit code for KindExited; the other pid for KindPidChanged and KindSuperseded
	moved bool   // a KindPidChanged call waiting for its resume, already judged
}

// ErrSyntax marks a line the parser cannot read.
var ErrSyntax = errors.New("unparsable trace line")

func syntax(line []byte, why string) error {
	if len(line) > 200 {
		line = append(line[:200:200], "..."...)
	}
	return fmt.Errorf("%w (%s): %q", ErrSyntax, why, line)
}

// ParseLine parses one line, without its newline.
func ParseLine(b []byte) (Line, error) {
	var l Line
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == 0 || i > 10 {
		return l, syntax(b, "no pid")
	}
	pid, err := strconv.Atoi(string(b[:i]))
	if err != nil {
		return l, syntax(b, "bad pid")
	}
	l.Pid = pid
	for i < len(b) && b[i] == ' ' {
		i++
	}
	rest := b[i:]
	switch {
	case bytes.HasPrefix(rest, []byte("--- ")):
		l.Kind = KindSignal
		f := bytes.Fields(rest[4:])
		if len(f) > 0 {
			l.Name = string(f[0])
		}
		return l, nil
	case bytes.HasPrefix(rest, []byte("+++ exited with ")):
		l.Kind = KindExited
		f := bytes.Fields(rest[len("+++ exited with "):])
		if len(f) != 2 || string(f[1]) != "+++" {
			return l, syntax(b, "bad exit")
		}
		l.Code, err = strconv.Atoi(string(f[0]))
		if err != nil {
			return l, syntax(b, "bad exit code")
		}
		return l, nil
	case bytes.HasPrefix(rest, []byte("+++ killed by ")):
		l.Kind = KindKilled
		f := bytes.Fields(rest[len("+++ killed by "):])
		if len(f) < 2 || string(f[len(f)-1]) != "+++" {
			return l, syntax(b, "bad kill")
		}
		l.Name = string(f[0])
		return l, nil
	case bytes.HasPrefix(rest, []byte("+++ superseded by execve in pid ")):
		l.Kind = KindSuperseded
		f := bytes.Fields(rest[len("+++ superseded by execve in pid "):])
		if len(f) != 2 || string(f[1]) != "+++" {
			return l, syntax(b, "bad supersede")
		}
		l.Code, err = strconv.Atoi(string(f[0]))
		if err != nil || l.Code <= 0 {
			return l, syntax(b, "bad supersede pid")
		}
		return l, nil
	case bytes.HasPrefix(rest, []byte("<... ")):
		end := bytes.Index(rest[5:], []byte(" resumed>"))
		if end < 0 {
			return l, syntax(b, "bad resume")
		}
		l.Kind = KindResumed
		end += 5
		l.Name = string(rest[5:end])
		body := rest[end+len(" resumed>"):]
		args, ret, ok := splitCall(body)
		if !ok {
			return l, syntax(b, "no result")
		}
		l.Args, l.Ret = args, ret
		return l, nil
	}
	open := bytes.IndexByte(rest, '(')
	if open <= 0 || !isName(rest[:open]) {
		return l, syntax(b, "no syscall")
	}
	l.Name = string(rest[:open])
	body := rest[open+1:]
	const unfinished = " <unfinished ...>"
	if l, ok := pidChanged(l, body); ok {
		return l, nil
	}
	if bytes.HasSuffix(body, []byte(unfinished)) {
		// The arguments must not close: a closed call followed by the
		// marker is not a line strace prints.
		args := body[:len(body)-len(unfinished)]
		if _, _, ok := splitCall(args); ok {
			return l, syntax(b, "unfinished after a result")
		}
		l.Kind = KindUnfinished
		l.Args = string(args)
		return l, nil
	}
	args, ret, ok := splitCall(body)
	if !ok {
		return l, syntax(b, "no result")
	}
	l.Kind = KindCall
	l.Args, l.Ret = args, ret
	return l, nil
}

// pidChanged parses the arguments of an execve a non-leader thread made,
// `args <pid changed to N ...>` (checked by its cheap suffix first: this
// runs for every line).
func pidChanged(l Line, body []byte) (Line, bool) {
	const mark, end = " <pid changed to ", " ...>"
	if !bytes.HasSuffix(body, []byte(end)) {
		return l, false
	}
	k := bytes.LastIndex(body, []byte(mark))
	if k < 0 || len(body) <= k+len(mark)+len(end) {
		return l, false
	}
	n, err := strconv.Atoi(string(body[k+len(mark) : len(body)-len(end)]))
	args := body[:k]
	if _, _, closed := splitCall(args); err != nil || n <= 0 || closed {
		return l, false
	}
	l.Kind, l.Args, l.Code = KindPidChanged, string(args), n
	return l, true
}

// isName says whether b is a syscall name as strace prints it: an
// identifier (syscall_0x1b4 for a number it has no name for), or "???",
// which strace 6.1 prints when it cannot tell which call a thread is
// stopped in. We have seen it only as "N  ???( <unfinished ...>" just before
// "+++ exited", for a thread that exit_group ended inside an untraced call
// (a Go runtime thread when `go build` exits, about one run in six). A
// traced call reaches strace through its seccomp stop with its number
// known, so the line names no call the judge would judge; it is parsed as
// a call with no arguments, which judges nothing.
func isName(b []byte) bool {
	if string(b) == "???" {
		return true
	}
	for _, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// splitCall splits `args) = ret` at the parenthesis that closes the call,
// skipping strings, descriptor paths and comments.
func splitCall(b []byte) (args, ret string, ok bool) {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			j, ok := skipString(b, i)
			if !ok {
				return "", "", false
			}
			i = j
		case '<':
			if i > 0 && b[i-1] >= '0' && b[i-1] <= '9' {
				j, ok := skipDecoration(b, i)
				if !ok {
					return "", "", false
				}
				i = j
			}
		case '/':
			if i+1 < len(b) && b[i+1] == '*' {
				j := bytes.Index(b[i+2:], []byte("*/"))
				if j < 0 {
					return "", "", false
				}
				i += 2 + j + 1
			}
		case '(', '[', '{':
			depth++
		case ']', '}':
			depth--
		case ')':
			if depth > 0 {
				depth--
				continue
			}
			r := bytes.TrimLeft(b[i+1:], " ")
			if !bytes.HasPrefix(r, []byte("= ")) {
				return "", "", false
			}
			return string(b[:i]), string(r[2:]), true
		}
	}
	return "", "", false
}

// skipString returns the index of the quote closing the string opening at i.
func skipString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j, true
		}
	}
	return 0, false
}

// skipDecoration returns the index of the '>' closing the descriptor path
// opening at i (-y prints `3</path>`, its bytes escaped like a string's).
func skipDecoration(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '>':
			return j, true
		}
	}
	return 0, false
}

// SplitArgs splits an argument list at its top-level commas.
func SplitArgs(s string) []string {
	b := []byte(s)
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			j, ok := skipString(b, i)
			if !ok {
				i = len(b)
				continue
			}
			i = j
		case '<':
			if i > 0 && b[i-1] >= '0' && b[i-1] <= '9' {
				if j, ok := skipDecoration(b, i); ok {
					i = j
				}
			}
		case '/':
			if i+1 < len(b) && b[i+1] == '*' {
				if j := bytes.Index(b[i+2:], []byte("*/")); j >= 0 {
					i += 2 + j + 1
				}
			}
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if t := strings.TrimSpace(s[start:]); t != "" || len(out) > 0 {
		out = append(out, t)
	}
	return out
}

// Unquote decodes a string argument: `"..."`, optionally followed by `...`
// when strace cut it (truncated), or prefixed by @ for an abstract socket
// name (the caller checks for the @).
func Unquote(s string) (v string, truncated bool, ok bool) {
	s = strings.TrimPrefix(s, "@")
	if len(s) < 2 || s[0] != '"' {
		return "", false, false
	}
	end, found := skipString([]byte(s), 0)
	if !found {
		return "", false, false
	}
	tail := s[end+1:]
	if tail != "" && tail != "..." {
		return "", false, false
	}
	v, ok = unescape(s[1:end])
	return v, tail == "...", ok
}

// unescape decodes the C escapes strace prints.
func unescape(s string) (string, bool) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, true
	}
	out := make([]byte, 0, len(s)/4+1)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(s) {
			return "", false
		}
		switch c = s[i]; c {
		case 'x':
			if i+3 > len(s) {
				return "", false
			}
			hi, lo := unhex(s[i+1]), unhex(s[i+2])
			if hi < 0 || lo < 0 {
				return "", false
			}
			out = append(out, byte(hi<<4|lo))
			i += 2
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'v':
			out = append(out, '\v')
		case 'f':
			out = append(out, '\f')
		case 'a':
			out = append(out, '\a')
		case 'b':
			out = append(out, '\b')
		case '\\', '"', '\'', '<', '>', '|':
			out = append(out, c)
		default:
			if c < '0' || c > '7' {
				return "", false
			}
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, err := strconv.ParseUint(s[i:j], 8, 8)
			if err != nil {
				return "", false
			}
			out = append(out, byte(n))
			i = j - 1
		}
	}
	return string(out), true
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// Fd is a descriptor argument or result as -y prints it: `3</path>`,
// `-100</cwd>` for AT_FDCWD, or a bare number when strace could not name it.
type Fd struct {
	N    int64
	Path string // "" when strace printed none
}

// ParseFd parses a descriptor argument.
func ParseFd(s string) (Fd, bool) {
	s = strings.TrimSpace(s)
	lt := strings.IndexByte(s, '<')
	num := s
	if lt >= 0 {
		num = s[:lt]
	}
	if num == "AT_FDCWD" {
		num = "-100"
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return Fd{}, false
	}
	if lt < 0 {
		return Fd{N: n}, true
	}
	if !strings.HasSuffix(s, ">") {
		return Fd{}, false
	}
	p, ok := unescape(s[lt+1 : len(s)-1])
	return Fd{N: n, Path: p}, ok
}

// Result is a parsed return value.
type Result struct {
	Unknown bool   // `?`: the call never returned (the process ended in it)
	Val     int64  // the value (-1 on error)
	Errno   string // "ENOENT", "" on success
	Fd      Fd     // the descriptor path -y printed for a returned descriptor
	NsPid   int    // the pid in strace's namespace, from `2 /* 1730 in strace's PID NS */`
}

// ParseResult parses the text after " = ".
func ParseResult(s string) (Result, bool) {
	s = strings.TrimSpace(s)
	if s == "?" || strings.HasPrefix(s, "? ") {
		return Result{Unknown: true}, true
	}
	var r Result
	head := s
	if sp := strings.IndexByte(s, ' '); sp >= 0 {
		head = s[:sp]
		// A decorated descriptor can hold no raw space with -xx, but a
		// trace without it could: take the decoration whole.
		if lt := strings.IndexByte(s, '<'); lt >= 0 && lt < sp {
			if gt, ok := skipDecoration([]byte(s), lt); ok {
				head = s[:gt+1]
			}
		}
	}
	tail := strings.TrimSpace(s[len(head):])
	if strings.HasPrefix(head, "0x") {
		v, err := strconv.ParseUint(head[2:], 16, 64)
		if err != nil {
			return r, false
		}
		r.Val = int64(v)
		return r, true
	}
	fd, ok := ParseFd(head)
	if !ok {
		return r, false
	}
	r.Val, r.Fd = fd.N, fd
	if r.Val < 0 {
		f := strings.Fields(tail)
		if len(f) == 0 {
			return r, false
		}
		r.Errno = f[0]
		return r, true
	}
	if strings.HasPrefix(tail, "/* ") {
		f := strings.Fields(tail[3:])
		if len(f) > 0 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				r.NsPid = n
			}
		}
	}
	return r, true
}

// ParseFlags parses a flags argument printed by -X raw (`0x241`, `0x1200000|17`)
// or symbolically (`O_WRONLY|O_CREAT`, when known names are given).
func ParseFlags(s string, names map[string]uint64) (uint64, bool) {
	var v uint64
	s = strings.TrimSpace(s)
	multi := strings.IndexByte(s, '|') >= 0
	for rest, more := s, true; more; {
		var part string
		part, rest, more = strings.Cut(rest, "|")
		part = strings.TrimSpace(part)
		if part == "" && multi {
			// strace 6.1 prints a zero constant as nothing: statx's
			// AT_STATX_SYNC_AS_STAT|AT_SYMLINK_NOFOLLOW is "|0x900" with -X raw.
			continue
		}
		if n, ok := names[part]; ok {
			v |= n
			continue
		}
		n, err := strconv.ParseUint(part, 0, 64)
		if err != nil {
			return 0, false
		}
		v |= n
	}
	return v, true
}
