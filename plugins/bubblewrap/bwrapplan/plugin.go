// Package bwrapplan is warden's Linux confine backend: it turns a launch
// spec and its grant layers into a bubblewrap (bwrap) command that the core
// launches and supervises. Plan starts nothing and writes nothing.
//
// The view a target gets (DESIGN.md "What the target sees"):
//
//   - the host root read-only (`--ro-bind / /`), a fresh /proc, a minimal
//     /dev, every namespace unshared (`--unshare-all`, no network),
//     `--new-session`, `--die-with-parent`, `--cap-drop ALL`;
//   - an empty private home (a tmpfs) at the invoking user's own home path,
//     with HOME unchanged; /root and /home are covered with empty read-only
//     file systems, so no home's contents are ever visible; `grants.read`
//     paths under them are bound back read-only;
//   - the workspace and granted `write:` paths bound writable;
//   - each call directory bound writable at /dev/<name>, the environment's
//     values that name it (TMPDIR, TMP, TEMP…) rewritten to that path;
//   - the private root and every spec.cover path covered with an empty
//     read-only file system;
//   - every host Unix socket file the view shows masked with /dev/null
//     (connect answers ECONNREFUSED), ranked and capped as spec 001 "Host
//     services" says; the call directories' sockets (the runtime's own)
//     stay connectable.
//
// bwrap cannot filter exec: exec is audited, and the capabilities say so
// (filters_exec false). When the grant table's exec allow set can be
// expressed as Landlock rules (no deny carved out of an allowed directory,
// no name veto) and the kernel has Landlock, the plan adds a Landlock
// execute layer (landlock.go); run.json's "landlock" says whether it is in
// force and why not.
//
// Resource limits (`with: {memory, pids}`) are rlimits (limits.go): cgroup
// v2 delegation is not used. A limit rlimits cannot enforce refuses the
// launch (cpu cores always; pids for root, whom RLIMIT_NPROC does not bind).
//
// Limits and Landlock are set by the shim (package bwrapshim): the
// warden-bwrap-shim binary beside the plugin's (or, without it, the
// plugin's own binary), bound read-only at /dev/.warden-shim, which bwrap
// runs in place of the target; it sets them inside the sandbox and
// executes the target with the spec's argv. Without limits or Landlock the
// plan has no shim.
package bwrapplan

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/sdk"
)

// Name is the plugin's name: the binary is warden-plugin-bubblewrap.
const Name = "bubblewrap"

var withSchema = []byte(`{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "bwrap": {"type": "string", "minLength": 1, "description": "the bwrap binary to run (default: bwrap on PATH)"},
    "memory": {
      "description": "address space per process (RLIMIT_AS): bytes, or a size such as 2GiB, 512MiB, 1.5GB",
      "oneOf": [
        {"type": "integer", "minimum": 1},
        {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?\\s*(B|KiB|MiB|GiB|TiB|kB|KB|MB|GB|TB)?$"}
      ]
    },
    "pids": {"type": "integer", "minimum": 1, "description": "processes of the target's user in the sandbox (RLIMIT_NPROC); refused for root"},
    "cpu": {"type": "number", "exclusiveMinimum": 0, "description": "cores; needs cgroup v2 delegation, which this plugin does not use yet: refused"}
  }
}`)

// Config is the `with:` block.
type Config struct {
	// Bwrap is the bwrap binary: a path, or a name looked up on PATH.
	Bwrap string `json:"bwrap,omitempty"`
	// Memory, Pids and CPU are the resource limits (see limitPlan).
	Memory *Memory  `json:"memory,omitempty"`
	Pids   *uint64  `json:"pids,omitempty"`
	CPU    *float64 `json:"cpu,omitempty"`
}

// Plugin is the bubblewrap confine plugin.
type Plugin struct {
	mu      sync.Mutex // guards cfg, version and versionOf
	cfg     Config
	version string // bwrap's version, once read
	verPath string // the binary version was read from
}

// New returns the plugin with the default configuration.
func New() *Plugin { return &Plugin{} }

var (
	_ sdk.Confiner   = (*Plugin)(nil)
	_ sdk.Configurer = (*Plugin)(nil)
)

// Describe names the plugin and what its confinement guarantees.
func (*Plugin) Describe() sdk.Description {
	return sdk.Description{
		Name:       Name,
		Version:    "0.1.0",
		Summary:    "confines the target with bubblewrap: read-only host, private home, no network",
		WithSchema: withSchema,
		Platforms:  []*sdk.Platform{{Goos: "linux"}},
		Capabilities: &sdk.Capabilities{Confine: &pb.ConfineCapabilities{
			MasksUnixSockets: true,
			FiltersExec:      false,
			ReadonlyHostRoot: true,
			PrivateHome:      true,
			NetworkModes:     []string{"none"},
		}},
	}
}

// Configure reads the `with:` block.
func (p *Plugin) Configure(_ context.Context, req *sdk.ConfigureRequest) error {
	var c Config
	if w := bytes.TrimSpace(req.GetWithJson()); len(w) > 0 {
		dec := json.NewDecoder(bytes.NewReader(w))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return fmt.Errorf("bubblewrap's with: block (%s): %v: %w", w, err, sdk.ErrInvalidConfig)
		}
		if (c.Pids != nil && *c.Pids == 0) || (c.CPU != nil && *c.CPU <= 0) {
			return fmt.Errorf("bubblewrap's with: block (%s): pids and cpu must be positive: %w", w, sdk.ErrInvalidConfig)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cfg, p.version, p.verPath = c, "", ""
	return nil
}

func (p *Plugin) config() Config {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfg
}

// bwrap is the configured binary's name or path.
func (p *Plugin) bwrap() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg.Bwrap != "" {
		return p.cfg.Bwrap
	}
	return "bwrap"
}
