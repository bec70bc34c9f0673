package supervise

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testRoleEnv makes the test binary play a part in a test instead of running
// the tests: a mini warden that the test kills or suspends, a target that
// escapes the group, or a target that prints what it was given.
const testRoleEnv = "SUPERVISE_TEST_ROLE"

func TestMain(m *testing.M) {
	Init()
	if role, ok := os.LookupEnv(testRoleEnv); ok {
		os.Exit(playRole(role))
	}
	os.Exit(m.Run())
}

func playRole(role string) int {
	switch role {
	case "warden-kill":
		return miniWarden(Spec{Path: "/bin/sh", Args: []string{"sh", "-c", "sleep 1000 & sleep 1000"}})
	case "warden-suspend":
		return miniWarden(Spec{Path: "/bin/sh", Args: []string{"sh", "-c", "sleep 0.5; echo done"}, Timeout: 10 * time.Second})
	case "warden-backstop":
		return miniWarden(Spec{Path: "/bin/sleep", Args: []string{"sleep", "1000"}, Timeout: 500 * time.Millisecond, Grace: 100 * time.Millisecond})
	case "holder-idle", "holder-chatty":
		return holder(role == "holder-chatty")
	case "introspect":
		dir, _ := os.Getwd()
		b, _ := json.Marshal(map[string]any{"args": os.Args, "env": os.Environ(), "dir": dir})
		os.Stdout.Write(b)
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown test role %q\n", role)
	return 2
}

// miniWarden supervises spec like warden does, prints "started PGID
// WATCHDOGPID", then the Result as JSON once the target ended.
func miniWarden(spec Spec) int {
	p, err := Start(context.Background(), spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("started %d %d\n", p.Pid(), p.wd.proc.Pid)
	res, err := p.Wait()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b, _ := json.Marshal(res)
	fmt.Printf("result %s\n", b)
	return 0
}

// holder leaves the target's process group, records its pid and keeps the
// inherited stdout open (idle) or busy (chatty) for at most 30 s.
func holder(chatty bool) int {
	if _, err := unix.Setsid(); err != nil {
		return 1
	}
	if err := os.WriteFile(os.Getenv("PIDFILE"), fmt.Appendf(nil, "%d", os.Getpid()), 0o600); err != nil {
		return 1
	}
	end := time.Now().Add(30 * time.Second)
	line := []byte(strings.Repeat("x", 63) + "\n")
	for time.Now().Before(end) {
		if !chatty {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if _, err := os.Stdout.Write(line); err != nil {
			return 0 // warden closed its end
		}
		time.Sleep(time.Millisecond)
	}
	return 0
}
