package bwrapplan

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/sdk"
)

func TestParseMemory(t *testing.T) {
	for s, want := range map[string]Memory{
		"2GiB": 2 << 30, "512MiB": 512 << 20, "1.5GB": 1.5e9, "4096": 4096, "64 KiB": 64 << 10, "10B": 10,
	} {
		if got, err := ParseMemory(s); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0", "2 lots", "-1GiB", "GiB", "1e9", "2gib"} {
		if got, err := ParseMemory(s); err == nil {
			t.Errorf("%q: %d, want an error", s, got)
		}
	}
}

// TestWithSchemaLimits checks the with: block against the schema the
// engine validates with, and Configure against the same cases.
func TestWithSchemaLimits(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(withSchema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	if err := c.AddResource("with.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("with.json")
	if err != nil {
		t.Fatal(err)
	}
	for with, ok := range map[string]bool{
		`{"memory":"2GiB","pids":512,"cpu":4}`: true,
		`{"memory":1073741824}`:                true,
		`{"memory":"1.5 GB"}`:                  true,
		`{"memory":"2 lots"}`:                  false,
		`{"memory":0}`:                         false,
		`{"memory":-5}`:                        false,
		`{"pids":0}`:                           false,
		`{"pids":1.5}`:                         false,
		`{"cpu":0}`:                            false,
		`{"cpu":-1}`:                           false,
		`{"swap":"1GiB"}`:                      false,
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(with))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); (err == nil) != ok {
			t.Errorf("schema, %s: %v, want ok=%v", with, err, ok)
		}
		if err := New().Configure(t.Context(), &pb.ConfigureRequest{WithJson: []byte(with)}); (err == nil) != ok {
			t.Errorf("Configure, %s: %v, want ok=%v", with, err, ok)
		}
	}
}

// TestPlanLimitsRefused: a limit rlimits cannot enforce refuses the
// launch, naming why; none is dropped silently.
func TestPlanLimitsRefused(t *testing.T) {
	for name, c := range map[string]struct {
		with string
		uid  uint32
		want string
	}{
		"cpu":          {`{"cpu":4}`, 1000, "rlimits cannot cap cores"},
		"pids as root": {`{"pids":512,"memory":"2GiB"}`, 0, "RLIMIT_NPROC does not bind uid 0"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "true")
			f.with, f.spec.Uid = c.with, c.uid
			_, err := f.plan(t)
			if !errors.Is(err, sdk.ErrHostUnsupported) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("plan: %v, want ErrHostUnsupported naming %q", err, c.want)
			}
		})
	}
	// memory alone is enforceable for root
	f := newFixture(t, "true")
	f.with = `{"memory":"2GiB"}`
	fc := planFacts(t, f)
	if fc.Limits == nil || fc.Limits.Mechanism != "rlimit" || fc.Limits.MemoryBytes != 2<<30 || fc.Limits.Pids != 0 || fc.Shim == "" {
		t.Errorf("facts %+v shim %q", fc.Limits, fc.Shim)
	}
}

// TestLimitsMemory runs a target past its memory limit: the allocation
// fails in the sandbox, one under the limit succeeds, and the target
// cannot raise the limit (the hard limit is set too).
func TestLimitsMemory(t *testing.T) {
	needBwrap(t)
	py, err := exec.LookPath("python3")
	if err != nil || !strings.HasPrefix(py, "/usr/") {
		if py = "/usr/bin/python3"; !fileExists(py) {
			t.Skip("no python3 in /usr (the view hides homes)")
		}
	}
	f := newFixture(t, "")
	f.with = `{"memory":"256MiB"}`
	f.spec.Path, f.spec.Argv = py, []string{"python3", "-c", `
import resource, sys
print(resource.getrlimit(resource.RLIMIT_AS)[0])
try:
    resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    print("RAISED")
except (ValueError, OSError):
    pass
a = bytearray(64 << 20)
print("64MiB ok")
sys.stdout.flush()
b = bytearray(1 << 30)
print("1GiB ALLOCATED")
`}
	out, stderr, code := f.run(t)
	if want := strconv.Itoa(256<<20) + "\n64MiB ok\n"; out != want || code == 0 || !strings.Contains(stderr, "MemoryError") {
		t.Errorf("exit %d stdout %q want %q stderr %q", code, out, want, stderr)
	}
	if fc := planFacts(t, f); fc.Limits == nil || fc.Limits.MemoryBytes != 256<<20 || fc.Argv0 == "" {
		t.Errorf("facts %+v", fc.Limits)
	}
}

// TestLimitsPids runs a fork loop under pids: 16 as an unprivileged user
// (nobody when the test runs as root): the sandbox never holds more than
// 16 of the user's processes, and they all end with the sandbox.
func TestLimitsPids(t *testing.T) {
	needBwrap(t)
	const limit = 16
	f := newFixture(t, `(while :; do sleep 30 & done); exec sleep 30`)
	f.with = `{"pids":` + strconv.Itoa(limit) + `}`
	var wrap []string
	if os.Geteuid() == 0 {
		var ok bool
		if wrap, ok = asNobody(t, f); !ok {
			t.Skip("no setpriv or nobody to run the target unprivileged")
		}
		f.spec.Uid = f.cred.uid
	} else {
		f.spec.Uid = uint32(os.Getuid())
	}
	plan, err := f.plan(t)
	if err != nil {
		t.Fatal(err)
	}
	argv := append(append([]string{}, wrap...), plan.GetArgv()...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = plan.GetEnv(), plan.GetDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	most := 0
	defer func() { t.Logf("peak: %d processes", most) }()
	for range 10 {
		time.Sleep(100 * time.Millisecond)
		most = max(most, len(descendants(cmd.Process.Pid)))
	}
	cmd.Process.Kill() // the engine's timeout: bwrap's PID 1 dies with it, and the namespace with it
	cmd.Wait()
	// The count is the user's processes in the sandbox's user namespace:
	// bwrap's PID 1, the shell and its sleeps; the outer bwrap is not in it.
	if most < limit-2 || most > limit {
		t.Errorf("the bomb peaked at %d processes under pids: %d (stderr %.300s)", most, limit, stderr.String())
	}
	if !strings.Contains(stderr.String(), "fork") {
		t.Errorf("no fork was refused: %.300s", stderr.String())
	}
	time.Sleep(200 * time.Millisecond)
	if left := descendants(cmd.Process.Pid); len(left) != 0 {
		t.Errorf("processes outlived the sandbox: %v", left)
	}
}

// descendants lists the live processes below pid (by parent links).
func descendants(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[0] != "Z" {
			parent[p], _ = strconv.Atoi(fields[1])
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
