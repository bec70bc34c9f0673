package trace

import "testing"

func TestParseLine(t *testing.T) {
	cases := []struct {
		in   string
		want Line
	}{
		{`859   openat(-100</tmp>, "/etc/ld.so.cache", 0x80000) = 3</etc/ld.so.cache>`,
			Line{Pid: 859, Kind: KindCall, Name: "openat", Args: `-100</tmp>, "/etc/ld.so.cache", 0x80000`, Ret: `3</etc/ld.so.cache>`}},
		{`1 chdir("/tmp")                     = 0`, Line{Pid: 1, Kind: KindCall, Name: "chdir", Args: `"/tmp"`, Ret: "0"}},
		{`32169 vfork( <unfinished ...>`, Line{Pid: 32169, Kind: KindUnfinished, Name: "vfork", Args: ""}},
		{`32169 <... vfork resumed>)              = 32170`, Line{Pid: 32169, Kind: KindResumed, Name: "vfork", Ret: "32170"}},
		{`1173  --- SIGCHLD {si_signo=17, si_code=0x1} ---`, Line{Pid: 1173, Kind: KindSignal, Name: "SIGCHLD"}},
		{`8480  +++ exited with 1 +++`, Line{Pid: 8480, Kind: KindExited, Code: 1}},
		{`8480  +++ killed by SIGKILL (core dumped) +++`, Line{Pid: 8480, Kind: KindKilled, Name: "SIGKILL"}},
		{`7 exit_group(0)                          = ?`, Line{Pid: 7, Kind: KindCall, Name: "exit_group", Args: "0", Ret: "?"}},
		{`7 open("a) = 0\"b", 0) = 3`, Line{Pid: 7, Kind: KindCall, Name: "open", Args: `"a) = 0\"b", 0`, Ret: "3"}},
		{`7 openat(3<\x2f\x29>, "x", 0) = 4<\x2f\x78>`, Line{Pid: 7, Kind: KindCall, Name: "openat", Args: `3<\x2f\x29>, "x", 0`, Ret: `4<\x2f\x78>`}},
		{`7 execve("/x", ["x"], 0x7ffe /* 39 vars */ <unfinished ...>`, Line{Pid: 7, Kind: KindUnfinished, Name: "execve", Args: `"/x", ["x"], 0x7ffe /* 39 vars */`}},
	}
	for _, c := range cases {
		got, err := ParseLine([]byte(c.in))
		if err != nil || got != c.want {
			t.Errorf("%s:\n got %+v %v\nwant %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "x openat() = 0", "7 openat(\"x\", 0", "7 openat(\"x) = 0", "7 +++ exited with x +++", "7 <... openat>) = 0", "7 o-p(1) = 0"} {
		if _, err := ParseLine([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestParseResult(t *testing.T) {
	cases := []struct {
		in   string
		want Result
	}{
		{"0", Result{}},
		{"?", Result{Unknown: true}},
		{"-1 ENOENT (No such file or directory)", Result{Val: -1, Errno: "ENOENT", Fd: Fd{N: -1}}},
		{"-1 ENOSYS (Function not implemented) (INJECTED)", Result{Val: -1, Errno: "ENOSYS", Fd: Fd{N: -1}}},
		{`3</etc/x y>`, Result{Val: 3, Fd: Fd{N: 3, Path: "/etc/x y"}}},
		{`3<\x2f\x61>`, Result{Val: 3, Fd: Fd{N: 3, Path: "/a"}}},
		{"2 /* 1730 in strace's PID NS */", Result{Val: 2, Fd: Fd{N: 2}, NsPid: 1730}},
		{"0x7f00", Result{Val: 0x7f00}},
	}
	for _, c := range cases {
		got, ok := ParseResult(c.in)
		if !ok || got != c.want {
			t.Errorf("%s: got %+v %v, want %+v", c.in, got, ok, c.want)
		}
	}
}

func TestUnquote(t *testing.T) {
	for in, want := range map[string]string{
		`"\x2f\x0a\xff"`: "/\n\xff", `"a\"b\\c"`: `a"b\c`, `"\n\t"`: "\n\t", `"\1\0012"`: "\x01\x012", `""`: "",
	} {
		if got, _, ok := Unquote(in); !ok || got != want {
			t.Errorf("%s: %q %v, want %q", in, got, ok, want)
		}
	}
	if v, cut, ok := Unquote(`"abc"...`); !ok || !cut || v != "abc" {
		t.Errorf("truncated: %q %v %v", v, cut, ok)
	}
	for _, bad := range []string{`abc`, `"abc`, `"\x4"`, `"\q"`, `"a"b`} {
		if _, _, ok := Unquote(bad); ok {
			t.Errorf("%s unquoted", bad)
		}
	}
}
