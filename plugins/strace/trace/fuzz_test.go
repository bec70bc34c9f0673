package trace

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/warden-run/warden/core/grant"
)

// denyAll lists every access, so the fuzz property sees every path.
type denyAll struct{}

func (denyAll) Access(p string, op grant.Op) grant.Decision {
	return grant.Decision{Subject: p, Op: op, Verdict: grant.Deny, Reason: "fuzz"}
}

// hexQuote prints s as strace -xx does.
func hexQuote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, `\x%02x`, s[i])
	}
	return b.String()
}

// cQuote prints s as strace does without -x: printable ASCII as is, the
// rest as C escapes.
func cQuote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '<' || c == '>':
			// strace escapes the brackets of a -y decoration (and, being
			// harmless, of a string too).
			fmt.Fprintf(&b, `\x%02x`, c)
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\%o`, c)
			if i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '7' {
				// strace pads to three digits when a digit follows.
				b.Reset()
				return octalAll(s)
			}
		}
	}
	return b.String()
}

func octalAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, `\%03o`, s[i])
	}
	return b.String()
}

// FuzzParse: any file name (no NUL, as the kernel allows) printed the way
// strace prints an openat, alone or split across <unfinished ...> and
// <... resumed>, comes back as exactly that path, listed.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"/etc/passwd", "rel", "a\nb", `q"uote`, "x\xff\xfe", "/d/<x>) = 0", "..", "/proc/self/root/etc", "a, b", "sp ace", strings.Repeat("long/", 900)} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, name string, mode uint8) {
		if name == "" || strings.IndexByte(name, 0) >= 0 {
			return
		}
		quote := hexQuote
		if mode&1 != 0 {
			quote = cQuote
		}
		cwd := "/w\nd"
		want := name
		if !strings.HasPrefix(name, "/") {
			want = cwd + "/" + name
		}
		var lines []string
		lines = append(lines, `7  execve("\x2f\x62", ["\x62"], 0x0 /* 1 vars */) = 0`)
		call := fmt.Sprintf(`openat(-100<%s>, "%s", 0x80000`, quote(cwd), quote(name))
		if mode&2 != 0 {
			lines = append(lines, "7  "+call+" <unfinished ...>", "8  +++ exited with 0 +++", "7  <... openat resumed>) = 3<"+quote(want)+">")
		} else {
			lines = append(lines, "7  "+call+") = 3<"+quote(want)+">")
		}
		j := &Judge{Table: denyAll{}, Cwd: "/"}
		rep := j.Read(bytes.NewReader([]byte(strings.Join(lines, "\n") + "\n")))
		if rep.Error != "" {
			t.Fatalf("no evidence: %s\n%s", rep.Error, strings.Join(lines, "\n"))
		}
		for _, x := range rep.Findings {
			if x.Path == want && x.Syscall == "openat" && x.Op == grant.OpRead {
				return
			}
		}
		t.Fatalf("path %q not listed: %+v\n%s", want, rep.Findings, strings.Join(lines, "\n"))
	})
}

// FuzzLine: no line makes the parser or the judge panic, and a line the
// parser accepts the judge reads without losing its place.
func FuzzLine(f *testing.F) {
	for _, s := range []string{
		`1  openat(-100</>, "\x2f", 0) = 3</>`,
		`1  connect(3<socket:[1]>, {sa_family=0x1, sun_path="\x2f\x72"}, 110) = 0`,
		`1  clone(child_stack=NULL, flags=0x1200000|17) = 2 /* 1730 in strace's PID NS */`,
		`1  <... openat resumed>) = -1 ENOENT (No such file or directory)`,
		`1  --- SIGCHLD {si_signo=17} ---`, `1  +++ killed by SIGKILL +++`,
		`1  execve("/x", ["x"], 0x0 /* 1 vars */ <unfinished ...>`,
		`2  execve("/x", ["x"], 0x0 /* 1 vars */ <pid changed to 1 ...>`, `1  +++ superseded by execve in pid 2 +++`,
		`1  <... execve resumed>) = -1 (errno 18446744073709551595)`, `3  ???( <unfinished ...>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsRune(line, '\n') {
			return
		}
		_, _ = ParseLine([]byte(line))
		j := &Judge{Table: denyAll{}}
		_ = j.Feed([]byte(line))
		j.Finish()
	})
}
