package conformance

import (
	"testing"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/warden-run/warden/core/sdk"
)

// Dial serves p in-process over real gRPC, the way Serve does in a plugin
// binary but without a process, and returns the connection the stage
// clients (pb.NewSealClient(conn), …) use. The connection and the server end
// with the test; the socket lives in a temp directory of the test, not in
// /tmp.
func Dial(t *testing.T, p sdk.Plugin) *grpc.ClientConn {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir()) // go-plugin's test socket goes here
	client, _ := plugin.TestPluginGRPCConn(t, false, sdk.PluginSet(p))
	t.Cleanup(func() { client.Close() })
	raw, err := client.Dispense(sdk.PluginKey)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(*sdk.Conn).ClientConn
}
