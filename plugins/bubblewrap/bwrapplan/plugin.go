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
// bwrap cannot filter exec: exec is audited only, and the capabilities say
// so (filters_exec false).
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
    "bwrap": {"type": "string", "minLength": 1, "description": "the bwrap binary to run (default: bwrap on PATH)"}
  }
}`)

// Config is the `with:` block.
type Config struct {
	// Bwrap is the bwrap binary: a path, or a name looked up on PATH.
	Bwrap string `json:"bwrap,omitempty"`
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
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cfg, p.version, p.verPath = c, "", ""
	return nil
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
