package bwrapplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Memory is the `memory:` limit: bytes, written as an integer or as a
// string with a unit ("2GiB", "512MiB", "1.5GB", "4096").
type Memory uint64

var memoryPattern = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*(B|KiB|MiB|GiB|TiB|kB|KB|MB|GB|TB)?$`)

var memoryUnits = map[string]float64{
	"": 1, "B": 1,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
	"kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
}

// ParseMemory reads a memory size.
func ParseMemory(s string) (Memory, error) {
	m := memoryPattern.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("memory %q is not a size (an integer of bytes, or a number with a unit: B, KiB, MiB, GiB, TiB, kB, MB, GB, TB)", s)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("memory %q: %v", s, err)
	}
	b := n * memoryUnits[m[2]]
	if b < 1 || b >= math.MaxInt64 {
		return 0, fmt.Errorf("memory %q is out of range", s)
	}
	return Memory(b), nil
}

// UnmarshalJSON accepts an integer of bytes or a string with a unit.
func (m *Memory) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := ParseMemory(s)
		*m = v
		return err
	}
	var n uint64
	if err := json.Unmarshal(b, &n); err != nil || n == 0 {
		return fmt.Errorf("memory %s is not a positive integer of bytes nor a size string", b)
	}
	*m = Memory(n)
	return nil
}

// LimitFacts are the resource limits in force (run.json "limits").
type LimitFacts struct {
	// Mechanism is how they are enforced: "rlimit".
	Mechanism string `json:"mechanism"`
	// MemoryBytes is RLIMIT_AS, per process (not the sandbox's total).
	MemoryBytes uint64 `json:"memoryBytes,omitempty"`
	// Pids is RLIMIT_NPROC: the processes the target's uid may have in the
	// sandbox's user namespace.
	Pids uint64 `json:"pids,omitempty"`
	// AppliedBy says which process set them.
	AppliedBy string `json:"appliedBy"`
	// OnExceed is what the target sees past a limit.
	OnExceed map[string]string `json:"onExceed"`
	// Cgroup says why no cgroup enforces them.
	Cgroup string `json:"cgroup"`
}

// limitPlan checks the configured limits against what rlimits can enforce
// for this launch and returns the facts, or why the launch is refused. A
// declared limit is never dropped silently.
func limitPlan(c Config, uid uint32, cgroupV2 bool) (*LimitFacts, error) {
	if c.Memory == nil && c.Pids == nil && c.CPU == nil {
		return nil, nil
	}
	cg := "cgroup v2 is not mounted (no /sys/fs/cgroup/cgroup.controllers)"
	if cgroupV2 {
		cg = "cgroup v2 is present, but this plugin does not delegate a cgroup yet"
	}
	if c.CPU != nil {
		return nil, fmt.Errorf("with: cpu: %v (cores) cannot be enforced here: %s, and rlimits cannot cap cores; remove cpu: or run where cgroup v2 is delegated", *c.CPU, cg)
	}
	if c.Pids != nil && uid == 0 {
		return nil, fmt.Errorf("with: pids: %d cannot be enforced for root: RLIMIT_NPROC does not bind uid 0, and %s", *c.Pids, cg)
	}
	f := &LimitFacts{
		Mechanism: "rlimit",
		AppliedBy: "the plugin's shim inside the sandbox, after bwrap made the user namespace, before it executes the target",
		OnExceed:  map[string]string{},
		Cgroup:    "not used: " + cg,
	}
	if c.Memory != nil {
		f.MemoryBytes = uint64(*c.Memory)
		f.OnExceed["memory"] = "RLIMIT_AS per process: an allocation past it fails (ENOMEM); and the core sums the resident memory of the whole tree and ends the trial with exit 4 once the sum exceeds the limit (LaunchPlan.memory_limit_bytes)"
	}
	if c.Pids != nil {
		f.Pids = *c.Pids
		f.OnExceed["pids"] = "RLIMIT_NPROC: a fork past it fails (EAGAIN); the processes already running go on until the timeout"
	}
	return f, nil
}
