package straceaudit_test

import (
	"testing"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/plugins/strace/straceaudit"
)

func TestSandboxMap(t *testing.T) {
	m := straceaudit.SandboxMap(&pb.LaunchSpec{CallDirs: []*pb.CallDir{{Name: "t", HostPath: "/priv/run/t", SandboxPath: "/dev/t"}}})
	for in, want := range map[string]string{"/dev/t": "/priv/run/t", "/dev/t/x": "/priv/run/t/x", "/dev/tt": "/dev/tt", "/etc/x": "/etc/x"} {
		if got := m(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
