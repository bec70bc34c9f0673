package bwrapplan

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
)

func TestViewGrantedPaths(t *testing.T) {
	needBwrap(t)
	f := newFixture(t, "")
	t.Setenv("HOME", f.home) // ~ in grant keys is the invoking user's home
	mod := filepath.Join(f.home, "go", "pkg", "mod")
	cache := filepath.Join(f.root, "cache")
	for _, d := range []string{mod, cache} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(mod, "m.go"), "package m\n")
	f.spec.Grants = []*pb.GrantLayer{{Name: "pipeline",
		ExecAllow: []*pb.GrantKey{{Text: "@system"}},
		Read:      []*pb.GrantKey{{Text: "~/go/pkg/mod"}},
		Write:     []*pb.GrantKey{{Text: cache}},
	}}
	f.spec.Argv[2] = fmt.Sprintf(`cat %q; touch %q/x && echo WROTE-MOD; echo c > %q/c && cat %q/c; cat "$HOME/.ssh/id_ed25519"`, filepath.Join(mod, "m.go"), mod, cache, cache)
	out, stderr, _ := f.run(t)
	if want := "package m\nc\n"; out != want {
		t.Errorf("stdout %q want %q; stderr %s", out, want, stderr)
	}
	if _, err := os.Stat(filepath.Join(cache, "c")); err != nil {
		t.Errorf("the granted write did not reach the host: %v", err)
	}
	if _, err := os.Stat(filepath.Join(mod, "x")); err == nil {
		t.Errorf("the read-only grant was written")
	}
}

func TestViewHomeUnderHome(t *testing.T) {
	needBwrap(t)
	f := newFixture(t, `echo x > "$HOME/f" && ls -A /home "$HOME"; echo y > /home/other && echo WROTE-HOME; ls -A /root`)
	f.spec.Home = "/home/warden-test-user"
	f.spec.Env[1] = "HOME=" + f.spec.Home
	out, stderr, _ := f.run(t)
	if want := "/home:\nwarden-test-user\n\n/home/warden-test-user:\nf\n"; out != want {
		t.Errorf("stdout %q want %q; stderr %s", out, want, stderr)
	}
	if _, err := os.Lstat("/home/warden-test-user"); err == nil {
		t.Errorf("the private home's mount point reached the host")
	}
}

// TestViewHomeIsRoot checks root's own home: /root is then the private
// home (empty, writable), /home stays covered read-only. It writes nothing
// to /root, even in the sandbox.
func TestViewHomeIsRoot(t *testing.T) {
	needBwrap(t)
	f := newFixture(t, `ls -A /root; grep -E ' /(root|home) ' /proc/self/mountinfo | cut -d' ' -f5,6,9`)
	f.spec.Home = "/root"
	f.spec.Env[1] = "HOME=/root"
	out, stderr, _ := f.run(t)
	if want := "/home ro,nosuid,nodev,relatime tmpfs\n/root rw,nosuid,nodev,relatime tmpfs\n"; out != want {
		t.Errorf("stdout %q want %q; stderr %s", out, want, stderr)
	}
}
