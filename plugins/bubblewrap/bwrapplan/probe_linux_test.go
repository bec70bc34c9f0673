package bwrapplan

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
)

func TestProbeHealthy(t *testing.T) {
	needBwrap(t)
	p := New()
	r := p.Probe(context.Background(), &pb.HostInfo{})
	if r.GetHealth() != pb.ProbeResponse_HEALTH_HEALTHY {
		t.Fatalf("probe on a host with bwrap: %v", r)
	}
	f := r.GetFacts()
	if _, ok := parseVersion(f["bwrap.version"]); !ok || f["userns"] == "" || f["cgroup.v2"] == "" || f["bwrap.path"] == "" {
		t.Errorf("facts %v", f)
	}
	t.Logf("%s %v", r.GetReason(), f)
}

// fakeBwrap writes a bwrap that prints version and otherwise fails with msg.
func fakeBwrap(t *testing.T, version, msg string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bwrap")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '" + version + "'; exit 0; fi\necho '" + msg + "' >&2\nexit 1\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProbeUnhealthy(t *testing.T) {
	for name, c := range map[string]struct {
		bwrap func(t *testing.T) string
		want  []string
	}{
		"trial fails": {
			func(t *testing.T) string {
				return fakeBwrap(t, "bubblewrap 0.8.0", "bwrap: setting up uid map: Permission denied")
			},
			[]string{"a trial sandbox did not start", "exit status 1", "bwrap: setting up uid map: Permission denied", "--unshare-all"},
		},
		"version unreadable": {
			func(t *testing.T) string { return fakeBwrap(t, "firejail 0.9", "") },
			[]string{`printed "firejail 0.9", not "bubblewrap X.Y.Z"`},
		},
		"too old": {
			func(t *testing.T) string { return fakeBwrap(t, "bubblewrap 0.3.3", "") },
			[]string{"bwrap 0.3.3 is older than 0.4.0"},
		},
		"missing": {
			func(t *testing.T) string { return filepath.Join(t.TempDir(), "no-bwrap") },
			[]string{"bwrap is not usable", "no-bwrap"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := New()
			if err := p.Configure(context.Background(), &pb.ConfigureRequest{WithJson: []byte(`{"bwrap":"` + c.bwrap(t) + `"}`)}); err != nil {
				t.Fatal(err)
			}
			r := p.Probe(context.Background(), &pb.HostInfo{})
			if r.GetHealth() != pb.ProbeResponse_HEALTH_UNHEALTHY {
				t.Fatalf("probe: %v", r)
			}
			for _, w := range c.want {
				if !strings.Contains(r.GetReason(), w) {
					t.Errorf("reason %q lacks %q", r.GetReason(), w)
				}
			}
		})
	}
}

func TestConfigureRefusesUnknownKeys(t *testing.T) {
	if err := New().Configure(context.Background(), &pb.ConfigureRequest{WithJson: []byte(`{"share_net":true}`)}); err == nil {
		t.Fatal("an unknown with: key was accepted")
	}
}
