package bwrapplan

import (
	"cmp"
	"encoding/json"
	"fmt"
	"github.com/warden-run/warden/plugins/bubblewrap/bwrapshim"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/warden-run/warden/core/grant"
	"github.com/warden-run/warden/core/grantwire"
	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/sdk"
)

// hiddenHomes are covered with an empty read-only file system in every
// view, whoever the invoking user is: no home's contents are ever visible.
var hiddenHomes = []string{"/home", "/root"}

// Facts is what Plan records in run.json: the confinement in force.
type Facts struct {
	Backend      string    `json:"backend"`
	Bwrap        BwrapFact `json:"bwrap"`
	Namespaces   []string  `json:"namespaces"`
	NestedUserns string    `json:"nestedUserns"`
	Network      string    `json:"network"`
	Capabilities string    `json:"capabilities"`
	RootFS       string    `json:"rootfs"`
	Home         HomeFact  `json:"home"`
	Covered      []string  `json:"covered"`
	// CoverAbsent are spec.cover paths that do not exist on the host: there
	// is nothing to hide, and bwrap cannot make a mount point on the
	// read-only root.
	CoverAbsent []string      `json:"coverAbsent,omitempty"`
	Workspace   string        `json:"workspace"`
	CallDirs    []CallDirFact `json:"callDirs"`
	ReadExposed []string      `json:"readExposed"`
	WriteBound  []string      `json:"writeBound"`
	Exec        string        `json:"exec"`
	Landlock    string        `json:"landlock"`
	// LandlockExec are the sandbox paths beneath which Landlock lets the
	// target execute, when the layer is in force.
	LandlockExec []string    `json:"landlockExec,omitempty"`
	Limits       *LimitFacts `json:"limits,omitempty"`
	// Shim is the shim binary bound at bwrapshim.Path when the launch runs
	// through it (limits, Landlock).
	Shim        string      `json:"shim,omitempty"`
	UnixSockets SocketFacts `json:"unixSockets"`
	Argv0       string      `json:"argv0"`
}

// planOpts is what a plan needs beyond the spec: the configured limits and
// what the host offers.
type planOpts struct {
	cfg Config
	// shim is the host path of the plugin's binary ("" when unknown).
	shim string
	// landlockABI is the kernel's Landlock ABI (0: none, landlockWhy says why).
	landlockABI int
	landlockWhy string
	cgroupV2    bool
}

// BwrapFact names the bwrap binary that runs the target.
type BwrapFact struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

// HomeFact says what the target sees at its home path.
type HomeFact struct {
	Path   string   `json:"path"`
	Mode   string   `json:"mode"`
	Hidden []string `json:"hidden"`
}

// CallDirFact is one call directory and where the target sees it.
type CallDirFact struct {
	Name    string `json:"name"`
	Host    string `json:"host"`
	Sandbox string `json:"sandbox"`
}

// mount is one mount operation of the view. Operations are emitted
// shallowest destination first, so a mount never hides a deeper one that
// was meant to show through (the workspace beneath the covered private
// root, a granted path beneath the private home); at one depth a covering
// tmpfs comes before a bind.
type mount struct {
	dest  string
	class int // 0 covers, 1 binds
	args  []string
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// build turns a launch spec into the bwrap command. It reads the host's
// file system (which covered and granted paths exist, where links lead)
// and nothing else; it is deterministic for one spec and host.
func build(bwrap, version string, spec *pb.LaunchSpec, scan socketScan) (*pb.LaunchPlan, error) {
	return buildWith(bwrap, version, spec, scan, planOpts{landlockWhy: "not probed"})
}

func buildWith(bwrap, version string, spec *pb.LaunchSpec, scan socketScan, opts planOpts) (*pb.LaunchPlan, error) {
	if len(spec.GetArgv()) == 0 {
		return nil, fmt.Errorf("the launch spec has no argv: %w", sdk.ErrInvalidConfig)
	}
	for _, f := range []struct{ name, p string }{
		{"path", spec.GetPath()}, {"workspace", spec.GetWorkspace()}, {"dir", spec.GetDir()}, {"home", spec.GetHome()},
	} {
		if !filepath.IsAbs(f.p) || filepath.Clean(f.p) != f.p {
			return nil, fmt.Errorf("the launch spec's %s %q is not a clean absolute path: %w", f.name, f.p, sdk.ErrInvalidConfig)
		}
	}
	home, ws := spec.GetHome(), spec.GetWorkspace()
	if home == "/" {
		return nil, fmt.Errorf("the home is /: a private home there would hide the host: %w", sdk.ErrInvalidConfig)
	}
	if _, err := os.Stat(home); err != nil && !within(home, "/home") && !within(home, "/root") {
		// bwrap makes a missing mount point only inside a tmpfs it made.
		return nil, fmt.Errorf("the home %s does not exist: %w", home, sdk.ErrInvalidConfig)
	}
	for _, g := range spec.GetGrants() {
		if len(g.GetEgress()) > 0 {
			k := g.GetEgress()[0]
			return nil, fmt.Errorf("%s: grants.egress %q: egress is not supported yet by the bubblewrap plugin (the target has no network): %w",
				posString(k.GetPos()), k.GetText(), sdk.ErrInvalidConfig)
		}
	}

	// Covers: the private root and every spec.cover path, at their real
	// paths (the view mirrors the host's layout).
	var covers, absent []string
	var coverFiles []string
	for _, c := range append([]string{spec.GetPrivateRoot()}, spec.GetCover()...) {
		if c == "" {
			continue
		}
		if !filepath.IsAbs(c) {
			return nil, fmt.Errorf("cover path %q is not absolute: %w", c, sdk.ErrInvalidConfig)
		}
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			absent = append(absent, filepath.Clean(c))
			continue
		}
		if real == "/" {
			return nil, fmt.Errorf("cover path %q is the root: %w", c, sdk.ErrInvalidConfig)
		}
		fi, err := os.Stat(real)
		if err != nil {
			absent = append(absent, filepath.Clean(c))
			continue
		}
		if ws == real {
			return nil, fmt.Errorf("the workspace %s is a covered path: %w", ws, sdk.ErrInvalidConfig)
		}
		if fi.IsDir() {
			covers = append(covers, real)
		} else {
			coverFiles = append(coverFiles, real)
		}
	}
	covers, coverFiles, absent = sortUniq(covers), sortUniq(coverFiles), sortUniq(absent)

	// Call directories, at /dev/<name>.
	var calls []CallDirFact
	for _, d := range spec.GetCallDirs() {
		n := d.GetName()
		if n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\x00") {
			return nil, fmt.Errorf("call directory name %q is not one path component: %w", n, sdk.ErrInvalidConfig)
		}
		if "/dev/"+n == bwrapshim.Path {
			return nil, fmt.Errorf("call directory name %q is the shim's place in the sandbox: %w", n, sdk.ErrInvalidConfig)
		}
		h := d.GetHostPath()
		if !filepath.IsAbs(h) || filepath.Clean(h) != h {
			return nil, fmt.Errorf("call directory %s: host path %q is not a clean absolute path: %w", n, h, sdk.ErrInvalidConfig)
		}
		calls = append(calls, CallDirFact{Name: n, Host: h, Sandbox: "/dev/" + n})
	}
	slices.SortFunc(calls, func(a, b CallDirFact) int { return cmp.Compare(a.Name, b.Name) })
	for i := 1; i < len(calls); i++ {
		if calls[i].Name == calls[i-1].Name {
			return nil, fmt.Errorf("two call directories are named %s: %w", calls[i].Name, sdk.ErrInvalidConfig)
		}
	}

	// The grant table, compiled by the one verdict function: a granted
	// path is bound only where the table allows the access.
	var hostCalls []string
	for _, c := range calls {
		hostCalls = append(hostCalls, c.Host)
	}
	layers := make([]grant.Layer, 0, len(spec.GetGrants()))
	for _, g := range spec.GetGrants() {
		layers = append(layers, grantwire.FromProto(g))
	}
	table, err := grant.Compile(grant.Places{
		Workspace: ws, CallDirs: hostCalls, PrivateHome: home,
		Hidden: append(append(slices.Clone(covers), coverFiles...), absent...),
	}, grant.Tools{}, layers...)
	if err != nil {
		return nil, fmt.Errorf("unable to compile the grants: %w: %w", err, sdk.ErrInvalidConfig)
	}
	hidden := append([]string{home}, hiddenHomes...)
	var reads, writes []string
	for _, l := range layers {
		for _, k := range l.File.Write {
			if p, ok := granted(table, k.Text, home, grant.OpWrite); ok {
				writes = append(writes, p)
			}
		}
		for _, k := range l.File.Read {
			p, ok := granted(table, k.Text, home, grant.OpRead)
			if ok && slices.ContainsFunc(hidden, func(h string) bool { return within(p, h) }) {
				reads = append(reads, p)
			}
		}
	}
	writes = sortUniq(writes)
	reads = slices.DeleteFunc(sortUniq(reads), func(p string) bool { return slices.Contains(writes, p) })

	// The mounts.
	var ms []mount
	var remount []string
	homeHidden := []string{}
	for _, h := range hiddenHomes {
		if h == home {
			continue
		}
		homeHidden = append(homeHidden, h)
		ms = append(ms, mount{h, 0, []string{"--tmpfs", h}})
		remount = append(remount, h)
	}
	ms = append(ms, mount{home, 0, []string{"--tmpfs", home}})
	for _, c := range covers {
		ms = append(ms, mount{c, 0, []string{"--tmpfs", c}})
		remount = append(remount, c)
	}
	for _, c := range coverFiles {
		ms = append(ms, mount{c, 0, []string{"--ro-bind", "/dev/null", c}})
	}
	for _, p := range reads {
		ms = append(ms, mount{p, 1, []string{"--ro-bind-try", p, p}})
	}
	for _, p := range writes {
		ms = append(ms, mount{p, 1, []string{"--bind-try", p, p}})
	}
	ms = append(ms, mount{ws, 1, []string{"--bind", ws, ws}})
	for _, c := range calls {
		ms = append(ms, mount{c.Sandbox, 1, []string{"--bind", c.Host, c.Sandbox}})
	}

	// Limits and the Landlock execute layer: set by the shim in the sandbox.
	limits, err := limitPlan(opts.cfg, spec.GetUid(), opts.cgroupV2)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, sdk.ErrHostUnsupported)
	}
	landlock := "not in force: " + opts.landlockWhy
	execFact := "audited only: bwrap cannot filter exec"
	var llPaths []string
	if opts.landlockABI > 0 && opts.shim == "" {
		landlock = "not in force: the shim's binary, which applies it in the sandbox, is unknown"
	} else if opts.landlockABI > 0 {
		allowed, why := landlockExec(table.Exec.Kernel(), append(slices.Clone(covers), coverFiles...), ms)
		if why == "" {
			// The kernel executes a script's interpreter too; the guard
			// judged the head, so its interpreter comes with it.
			if in := interpreter(spec.GetPath()); in != "" {
				allowed = append(allowed, in)
			}
			for _, p := range append(allowed, loaders()...) {
				llPaths = append(llPaths, rewrite(p, calls))
			}
			llPaths = outermost(llPaths)
			landlock = fmt.Sprintf("in force (ABI %d): execute allowed beneath %d paths, the grant table's allow set, the ELF loaders and the head's interpreter", opts.landlockABI, len(llPaths))
			execFact = "audited, and limited by Landlock to the grant table's allow set (the ELF loader can still run a readable file: ld.so <file>)"
		} else {
			// A domain that allows every exec still keeps the target from
			// tracing (and, ABI 6+, signalling) the sandbox's PID 1.
			llPaths = []string{"/"}
			landlock = fmt.Sprintf("in force (ABI %d) for isolation only: exec is not limited, because %s", opts.landlockABI, why)
		}
		if opts.landlockABI >= 6 {
			landlock += "; no tracing, signalling or abstract-socket connecting outside the target's domain"
		} else {
			landlock += "; no tracing outside the target's domain"
		}
	}
	useShim := limits != nil || llPaths != nil
	if useShim && opts.shim == "" {
		return nil, fmt.Errorf("the limits need the plugin's shim, whose binary is unknown: %w", sdk.ErrHostUnsupported)
	}
	if useShim {
		ms = append(ms, mount{bwrapshim.Path, 1, []string{"--ro-bind", opts.shim, bwrapshim.Path}})
	}

	slices.SortStableFunc(ms, func(a, b mount) int {
		return cmp.Or(cmp.Compare(depth(a.dest), depth(b.dest)), cmp.Compare(a.class, b.class), cmp.Compare(a.dest, b.dest))
	})

	head := []string{bwrap, "--unshare-all"}
	nested := "allowed: bwrap " + version + " has no --disable-userns"
	if v, ok := parseVersion(version); ok && cmpVersion(v, [3]int{0, 8, 0}) >= 0 {
		// A nested user namespace is a large kernel surface and would let
		// the target mount over its view's paths: refuse it.
		head = append(head, "--unshare-user", "--disable-userns")
		nested = "disabled"
	}
	head = append(head, "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev")
	for _, m := range ms {
		head = append(head, m.args...)
	}
	var tail []string
	for _, r := range sortUniq(remount) {
		tail = append(tail, "--remount-ro", r)
	}
	tail = append(tail, "--chdir", rewrite(spec.GetDir(), calls), "--")
	argv0 := "the admitted path (bwrap " + version + " has no --argv0)"
	if useShim {
		sc := bwrapshim.Config{Exec: llPaths}
		if llPaths != nil {
			sc.Landlock = opts.landlockABI
			sc.Scope = opts.landlockABI >= 6
		}
		if limits != nil {
			sc.AS, sc.NProc = limits.MemoryBytes, limits.Pids
		}
		cj, err := json.Marshal(sc)
		if err != nil {
			return nil, fmt.Errorf("unable to encode the shim's configuration: %w", err)
		}
		tail = append(tail, bwrapshim.Path, bwrapshim.Arg, string(cj), spec.GetPath())
		tail = append(tail, spec.GetArgv()...)
		argv0 = "the spec's argv[0] (the shim executes the admitted path with it)"
	} else {
		tail = append(tail, spec.GetPath())
		tail = append(tail, spec.GetArgv()[1:]...)
	}

	sockFacts, masks, err := maskSockets(scan, ms, calls, spec.GetUid(), len(head)+len(tail))
	if err != nil {
		return nil, err
	}
	argv := append(append(head, masks...), tail...)

	env := make([]string, 0, len(spec.GetEnv()))
	for _, kv := range spec.GetEnv() {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, k+"="+rewrite(v, calls))
	}

	facts := Facts{
		Backend:      Name,
		Bwrap:        BwrapFact{Path: bwrap, Version: version},
		Namespaces:   []string{"user", "ipc", "pid", "net", "uts", "cgroup"},
		NestedUserns: nested,
		Network:      "none",
		Capabilities: "all dropped",
		RootFS:       "host root read-only",
		Home:         HomeFact{Path: home, Mode: "private empty tmpfs", Hidden: homeHidden},
		Covered:      sortUniq(append(slices.Clone(covers), coverFiles...)),
		CoverAbsent:  absent,
		Workspace:    ws,
		CallDirs:     calls,
		ReadExposed:  nonNil(reads),
		WriteBound:   nonNil(writes),
		Exec:         execFact,
		Landlock:     landlock,
		LandlockExec: llPaths,
		Limits:       limits,
		UnixSockets:  sockFacts,
		Argv0:        argv0,
	}
	if useShim {
		facts.Shim = fmt.Sprintf("%s at %s (exits %d, the target not run, when it cannot set a limit or Landlock)", opts.shim, bwrapshim.Path, bwrapshim.Failed)
	}
	if facts.CallDirs == nil {
		facts.CallDirs = []CallDirFact{}
	}
	fj, err := json.Marshal(facts)
	if err != nil {
		return nil, fmt.Errorf("unable to encode the confinement facts: %w", err)
	}
	plan := &pb.LaunchPlan{Argv: argv, Env: env, Dir: spec.GetDir(), FactsJson: fj}
	if limits != nil && limits.MemoryBytes > 0 {
		// The whole trial's memory, which RLIMIT_AS (per process) cannot
		// bound, is the core's to watch.
		plan.MemoryLimitBytes = int64(limits.MemoryBytes)
	}
	return plan, nil
}

// SocketFacts says which host Unix sockets the plan masks.
type SocketFacts struct {
	Masked int `json:"masked"`
	// SocketsLeftReachable counts the socket files the scan found that stay
	// connectable: past the room (only files beside a listed path, never a
	// listed one), or with a path the plan cannot name.
	SocketsLeftReachable int `json:"socketsLeftReachable"`
	Room                 int `json:"room"`
	// Unreachable are socket files beneath a directory the sandbox's user
	// cannot search: they need no mask.
	Unreachable int      `json:"unreachable"`
	Paths       []string `json:"paths"`
}

// maskSockets returns the mounts that mask every host socket file the view
// shows, ranked and cut to the room bwrap's argument limit leaves after the
// other used arguments. A listed socket past the room refuses the start.
// Sockets in /dev and /proc (replaced in the view), in a call directory
// (the runtime's own, such as the bridge's) and under a covering tmpfs take
// no room.
func maskSockets(scan socketScan, ms []mount, calls []CallDirFact, uid uint32, used int) (SocketFacts, []string, error) {
	room := min(max((bwrapArgMax-heldBack-used)/argsPerSocket, 0), maxSockets)
	var want []hostSocket
	for _, s := range scan.Sockets {
		if within(s.Path, "/dev") || within(s.Path, "/proc") ||
			slices.ContainsFunc(calls, func(c CallDirFact) bool { return within(s.Path, c.Host) }) ||
			!visible(s.Path, ms) {
			continue
		}
		want = append(want, s)
	}
	ranked := rankSockets(want, uid)
	facts := SocketFacts{Room: room, SocketsLeftReachable: scan.Unmaskable, Unreachable: scan.Unreachable, Paths: []string{}}
	if len(ranked) > room {
		for _, s := range ranked[room:] {
			if s.Listed {
				return facts, nil, fmt.Errorf("the host has %d Unix sockets to mask, more than the %d bwrap's argument room holds (%s is left out): %w",
					len(ranked), room, s.Path, sdk.ErrHostUnsupported)
			}
		}
		facts.SocketsLeftReachable += len(ranked) - room
		ranked = ranked[:room]
	}
	for _, s := range ranked {
		facts.Paths = append(facts.Paths, s.Path)
	}
	slices.Sort(facts.Paths)
	facts.Masked = len(facts.Paths)
	var args []string
	for _, p := range facts.Paths {
		args = append(args, "--bind", p, p, "--ro-bind", "/dev/null", p)
	}
	return facts, args, nil
}

// visible says whether the view shows host path p: the deepest mount that
// holds it is a bind (or none is, and the read-only root shows it).
func visible(p string, ms []mount) bool {
	best, class := -1, 1
	for _, m := range ms { // sorted: the later of two at one depth is on top
		if d := depth(m.dest); within(p, m.dest) && d >= best {
			best, class = d, m.class
		}
	}
	return class == 1
}

// granted expands a file key (~/ to the spec's home) and says whether the
// table allows op on it; the path must exist to be bound.
func granted(t grant.Table, key, home string, op grant.Op) (string, bool) {
	p := key
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = home + strings.TrimPrefix(p, "~")
	}
	if !filepath.IsAbs(p) {
		return "", false
	}
	p = filepath.Clean(p)
	real, err := filepath.EvalSymlinks(p)
	if err != nil || p == "/" {
		return "", false
	}
	return p, t.Access(real, op).Allowed()
}

// rewrite names a call directory's host path by its sandbox path.
func rewrite(v string, calls []CallDirFact) string {
	for _, c := range calls {
		if v == c.Host {
			return c.Sandbox
		}
		if rest, ok := strings.CutPrefix(v, c.Host+"/"); ok {
			return c.Sandbox + "/" + rest
		}
	}
	return v
}

// within says whether p is base or beneath it.
func within(p, base string) bool {
	return p == base || base == "/" || strings.HasPrefix(p, base+"/")
}

func sortUniq(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func posString(p *pb.Pos) string {
	if p.GetFile() == "" {
		return "grants"
	}
	return fmt.Sprintf("%s:%d:%d", p.GetFile(), p.GetLine(), p.GetCol())
}
