package bwrapplan

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/warden-run/warden/core/sdk"
)

func TestParseUnixTable(t *testing.T) {
	table := `Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 17393 /run/systemd/private
0000000000000000: 00000002 00000000 00010000 0001 01  1523 /var/run/docker.sock
0000000000000000: 00000003 00000000 00000000 0001 03  1596
0000000000000000: 00000002 00000000 00010000 0001 01 20210 @/tmp/.X11-unix/X0
0000000000000000: 00000002 00000000 00010000 0001 01 20211 /tmp/a dir/with space.sock
`
	got, err := parseUnixTable(strings.NewReader(table))
	want := []string{"/run/systemd/private", "/var/run/docker.sock", "/tmp/a dir/with space.sock"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("got %q %v, want %q", got, err, want)
	}
}

func TestRankSockets(t *testing.T) {
	socks := []hostSocket{
		{Path: "/home/a/1", UID: 1001}, {Path: "/home/a/2", UID: 1001}, {Path: "/home/a/3", UID: 1001},
		{Path: "/home/b/1", UID: 1002},
		{Path: "/home/me/s", UID: 1500},
		{Path: "/run/user/0/x", UID: 0}, {Path: "/run/nobody", UID: 65534},
		{Path: "/run/docker.sock", UID: 0}, {Path: "/run/dbus/system_bus_socket", UID: 100},
		{Path: "/run/systemd/notify", UID: 0}, {Path: "/run/podman/podman.sock", UID: 1001},
	}
	var got []string
	for _, s := range rankSockets(socks, 1500) {
		got = append(got, s.Path)
	}
	want := []string{
		"/run/docker.sock", "/run/systemd/notify", "/run/dbus/system_bus_socket", "/run/podman/podman.sock",
		"/run/user/0/x", "/run/nobody",
		"/home/me/s",
		"/home/a/1", "/home/b/1", "/home/a/2", "/home/a/3",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rank\n got %q\nwant %q", got, want)
	}
}

func TestMaskSocketsRoom(t *testing.T) {
	f := newFixture(t, "true")
	var scan socketScan
	for i := range 1400 {
		scan.Sockets = append(scan.Sockets, hostSocket{Path: fmt.Sprintf("/run/u/s%04d", i), UID: 2000 + uint32(i%3), Listed: i < 1000})
	}
	// sockets that take no room
	scan.Sockets = append(scan.Sockets,
		hostSocket{Path: "/dev/log", Listed: true},
		hostSocket{Path: filepath.Join(f.call, "bridge.sock"), Listed: true},
		hostSocket{Path: filepath.Join(f.home, ".gnupg", "S.gpg-agent"), Listed: true},
		hostSocket{Path: filepath.Join(f.gitDir, "fsmonitor--daemon.ipc"), Listed: true})
	scan.Unmaskable = 2
	plan, err := build("/usr/bin/bwrap", "0.8.0", f.spec, scan)
	if err != nil {
		t.Fatal(err)
	}
	argv := plan.GetArgv()
	if len(argv) > bwrapArgMax-heldBack {
		t.Errorf("argv has %d arguments", len(argv))
	}
	masked := 0
	for i, a := range argv {
		if a == "--ro-bind" && argv[i+1] == "/dev/null" {
			masked++
			if argv[i-3] != "--bind" || argv[i-2] != argv[i+2] || argv[i-1] != argv[i+2] {
				t.Fatalf("the mask of %s does not follow a bind of the path onto itself", argv[i+2])
			}
		}
	}
	for _, p := range []string{"/dev/log", "bridge.sock", "S.gpg-agent", "fsmonitor"} {
		if strings.Contains(strings.Join(argv, " "), p) {
			t.Errorf("%s is masked", p)
		}
	}
	var facts Facts
	if err := jsonUnmarshal(plan.GetFactsJson(), &facts); err != nil {
		t.Fatal(err)
	}
	s := facts.UnixSockets
	if s.Masked != masked || s.Masked != s.Room || s.SocketsLeftReachable != 1400-s.Room+2 || s.Room < 1000 {
		t.Errorf("masked %d in argv, facts %+v", masked, struct{ Masked, Room, Left int }{s.Masked, s.Room, s.SocketsLeftReachable})
	}

	// A listed socket past the room refuses the start.
	for i := range scan.Sockets {
		scan.Sockets[i].Listed = true
	}
	if _, err := build("/usr/bin/bwrap", "0.8.0", f.spec, scan); !errors.Is(err, sdk.ErrHostUnsupported) || !strings.Contains(err.Error(), "argument room") {
		t.Fatalf("a list past the room: %v", err)
	}
}

// TestViewSocketsMasked runs the plan with real listeners on the host.
func TestViewSocketsMasked(t *testing.T) {
	needBwrap(t)
	f := newFixture(t, "")
	svc := filepath.Join(f.root, "svc")
	if err := os.Mkdir(svc, 0o755); err != nil {
		t.Fatal(err)
	}
	listen := func(network, addr string) net.Listener {
		l, err := net.Listen(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return l
	}
	agent := filepath.Join(svc, "agent.sock")
	listen("unix", agent)
	// a socket its process moved after binding (OpenSSH's control master)
	listen("unix", filepath.Join(svc, "ctl.sock"))
	moved := filepath.Join(svc, "moved.sock")
	if err := os.Rename(filepath.Join(svc, "ctl.sock"), moved); err != nil {
		t.Fatal(err)
	}
	bridge := filepath.Join(f.call, "bridge.sock") // the runtime's own: stays connectable
	listen("unix", bridge)
	abstract := fmt.Sprintf("warden-test-%d", rand.Uint64())
	listen("unix", "@"+abstract)
	tcp := listen("tcp", "127.0.0.1:0").Addr().String()

	dev := "/dev/" + filepath.Base(f.call)
	f.spec.Path, f.spec.Argv = helperBin, []string{"connect", connectArg, "unix:" + agent, "unix:" + moved, "unix:" + dev + "/bridge.sock", "abstract:" + abstract, "tcp:" + tcp}
	out, stderr, code := f.run(t)
	want := strings.Join([]string{
		"unix:" + agent + " connection refused",
		"unix:" + moved + " connection refused",
		"unix:" + dev + "/bridge.sock ok",
		"abstract:" + abstract + " connection refused",
		"tcp:" + tcp + " connection refused", // loopback of the new network namespace
	}, "\n") + "\n"
	if code != 0 || out != want {
		t.Errorf("exit %d stdout\n%s\nwant\n%s\nstderr %s", code, out, want, stderr)
	}
	plan, err := New().Plan(t.Context(), f.spec)
	if err != nil {
		t.Fatal(err)
	}
	var facts Facts
	if err := jsonUnmarshal(plan.GetFactsJson(), &facts); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(facts.UnixSockets.Paths, agent) || !slices.Contains(facts.UnixSockets.Paths, moved) || slices.Contains(facts.UnixSockets.Paths, bridge) {
		t.Errorf("masked %q", facts.UnixSockets.Paths)
	}
	// the host sockets still serve the host
	for _, p := range []string{agent, moved} {
		c, err := net.Dial("unix", p)
		if err != nil {
			t.Errorf("host connect %s: %v", p, err)
			continue
		}
		c.Close()
	}
}
