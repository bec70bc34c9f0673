package pluginhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/warden-run/warden/core/errdefs"
	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/sdk"
)

// EnvAllowlist is every variable of the core's environment a plugin
// receives; nothing else of the operator's environment (tokens, keys)
// reaches a plugin.
var EnvAllowlist = []string{
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
	"TMPDIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "WARDEN_LOG",
}

// DefaultStartTimeout bounds a plugin's start and handshake.
const DefaultStartTimeout = 10 * time.Second

// Options say how to launch one plugin.
type Options struct {
	Name string // the plugin's name (warden-plugin-<name>)
	Path string // the binary
	// SocketDir is a short, 0700, core-owned directory for the plugin's
	// socket (PLUGIN_UNIX_SOCKET_DIR). Required.
	SocketDir string
	// SHA256, when set ("sha256:<hex>"), pins the binary: a binary with
	// other bytes is refused.
	SHA256       string
	StartTimeout time.Duration // default DefaultStartTimeout
	Logger       hclog.Logger  // default: discard
	LogLevel     string        // WARDEN_LOG passed to the plugin
}

// Plugin is a running plugin process.
type Plugin struct {
	Name   string
	Path   string
	SHA256 string
	Desc   *pb.Description

	client *plugin.Client
	conn   *grpc.ClientConn
	stderr *ring
	pgid   int

	closeOnce sync.Once
}

var semverRE = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// Launch starts the plugin, completes the handshake and checks its
// Description: the name must equal the file's, the version must be semver
// and the protocol must overlap. Every failure is a plugin fault (exit 5)
// naming the plugin and the last of its stderr.
func Launch(ctx context.Context, o Options) (*Plugin, error) {
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.SocketDir == "" {
		return nil, errors.New("pluginhost: Options.SocketDir is required")
	}
	// An unpinned binary is hashed while it starts (the digest is recorded,
	// not checked); a pinned one is checked before it starts and again by
	// go-plugin just before its exec.
	type digest struct {
		sum string
		err error
	}
	hashed := make(chan digest, 1)
	var raw []byte
	if o.SHA256 != "" {
		sum, err := FileSHA256(o.Path)
		if err != nil {
			return nil, errdefs.Errorf(errdefs.ErrPlugin, "plugin %s: unable to read %s: %w", o.Name, o.Path, err)
		}
		if sum != o.SHA256 {
			return nil, errdefs.Errorf(errdefs.ErrIntegrity, "plugin %s: %s has %s, the pin wants %s", o.Name, o.Path, sum, o.SHA256)
		}
		raw, _ = hex.DecodeString(strings.TrimPrefix(sum, "sha256:"))
		hashed <- digest{sum: sum}
	} else {
		go func() {
			sum, err := FileSHA256(o.Path)
			hashed <- digest{sum, err}
		}()
	}

	cmd := exec.Command(o.Path)
	cmd.Env = pluginEnv(o)
	cmd.SysProcAttr = sysProcAttr()
	p := &Plugin{Name: o.Name, Path: o.Path, stderr: newRing(64 << 10)}
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{sdk.ProtocolVersion: sdk.PluginSet(nil)},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		Managed:          true,
		StartTimeout:     o.StartTimeout,
		Logger:           o.Logger.Named(o.Name),
		Stderr:           p.stderr,
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(sdk.MaxMessageSize), grpc.MaxCallSendMsgSize(sdk.MaxMessageSize))},
	}
	if raw != nil {
		// A pinned binary is hashed again by go-plugin just before its exec,
		// which narrows the window between the check and the exec. A fresh
		// hash per client: SecureConfig never resets it.
		cfg.SecureConfig = &plugin.SecureConfig{Checksum: raw, Hash: sha256.New()}
	}
	p.client = plugin.NewClient(cfg)
	var rpc plugin.ClientProtocol
	var err error
	onSpawnThread(func() { rpc, err = p.client.Client() })
	h := <-hashed
	p.SHA256 = h.sum
	if err == nil && h.err != nil {
		err = fmt.Errorf("unable to hash %s: %w", o.Path, h.err)
	}
	if cmd.Process != nil {
		p.pgid = cmd.Process.Pid
	}
	if err != nil {
		p.Kill()
		return nil, p.fault("did not start", err)
	}
	raw2, err := rpc.Dispense(sdk.PluginKey)
	if err != nil {
		p.Kill()
		return nil, p.fault("did not serve the warden protocol", err)
	}
	p.conn = raw2.(*sdk.Conn).ClientConn

	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, err := pb.NewPluginClient(p.conn).Describe(dctx, &pb.DescribeRequest{})
	if err != nil {
		p.Kill()
		return nil, p.CallError(dctx, "Describe", err)
	}
	if err := checkDescription(o.Name, d); err != nil {
		p.Kill()
		return nil, errdefs.Errorf(errdefs.ErrPlugin, "plugin %s (%s): %v", o.Name, o.Path, err)
	}
	p.Desc = d
	return p, nil
}

func pluginEnv(o Options) []string {
	var env []string
	for _, k := range EnvAllowlist {
		if v, ok := os.LookupEnv(k); ok && k != "WARDEN_LOG" {
			env = append(env, k+"="+v)
		}
	}
	level := o.LogLevel
	if level == "" {
		level = "warn"
	}
	return append(env, "WARDEN_LOG="+level, "PLUGIN_UNIX_SOCKET_DIR="+o.SocketDir)
}

func checkDescription(name string, d *pb.Description) error {
	if d.GetName() != name {
		return fmt.Errorf("describes itself as %q, but its file is named %s%s: the two must match", d.GetName(), Prefix, name)
	}
	if !semverRE.MatchString(d.GetVersion()) {
		return fmt.Errorf("version %q is not semver (e.g. 1.2.0)", d.GetVersion())
	}
	ok := false
	for _, v := range d.GetProtocolVersions() {
		ok = ok || v == sdk.ProtocolVersion
	}
	if !ok {
		return fmt.Errorf("speaks protocol versions %v; this warden speaks %d", d.GetProtocolVersions(), sdk.ProtocolVersion)
	}
	if len(d.GetStages()) == 0 {
		return errors.New("serves no stage")
	}
	return nil
}

// Serves reports whether the plugin serves stage s.
func (p *Plugin) Serves(s pb.Stage) bool {
	for _, x := range p.Desc.GetStages() {
		if x == s {
			return true
		}
	}
	return false
}

// SupportsHost reports whether the plugin says it works on goos/goarch.
func (p *Plugin) SupportsHost(goos, goarch string) bool {
	pl := p.Desc.GetPlatforms()
	if len(pl) == 0 {
		return true
	}
	for _, x := range pl {
		if x.GetGoos() == goos && (x.GetGoarch() == "" || x.GetGoarch() == goarch) {
			return true
		}
	}
	return false
}

// Conn is the plugin's gRPC connection, for the stage clients.
func (p *Plugin) Conn() *grpc.ClientConn { return p.conn }

// Stderr returns the last of what the plugin wrote to stderr.
func (p *Plugin) Stderr() string { return p.stderr.String() }

// Pgid is the plugin's process group (its pid).
func (p *Plugin) Pgid() int { return p.pgid }

// CallError classes the error of a call to the plugin. A status the plugin
// returned keeps its class; a broken transport is a crash (exit 5) named
// with the plugin's last stderr; a deadline is a hang.
//
// ctx is the context the call was made with: when it has expired, the
// plugin did not answer in time.
func (p *Plugin) CallError(ctx context.Context, call string, err error) error {
	if err == nil {
		return nil
	}
	// The transport may see the deadline a moment before the context does.
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return p.fault(call+" did not answer in time (the plugin hangs)", err)
	}
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.Unavailable, codes.Canceled, codes.Unknown:
		if p.exitedWithin(3 * time.Second) {
			return p.fault(call+" crashed the plugin", err)
		}
		return p.fault(call+" failed in transport", err)
	}
	e := errdefs.FromGRPC(err)
	return fmt.Errorf("plugin %s: %s: %w", p.Name, call, e)
}

func (p *Plugin) exitedWithin(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if p.client.Exited() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p.client.Exited()
}

func (p *Plugin) fault(what string, err error) error {
	msg := fmt.Sprintf("plugin %s (%s): %s: %v", p.Name, p.Path, what, err)
	if tail := lastLines(p.Stderr(), 10); tail != "" {
		msg += "\n  last stderr:\n    " + strings.ReplaceAll(tail, "\n", "\n    ")
	}
	return errdefs.Errorf(errdefs.ErrPlugin, "%s", msg)
}

func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Kill ends the plugin: a best-effort Close call, go-plugin's Kill, then
// SIGKILL to the plugin's whole process group (go-plugin kills only its
// direct child), so no helper of the plugin outlives it.
func (p *Plugin) Kill() {
	p.closeOnce.Do(func() {
		if p.conn != nil && !p.client.Exited() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, _ = pb.NewPluginClient(p.conn).Close(ctx, &pb.CloseRequest{})
			cancel()
		}
		p.client.Kill()
		if p.pgid > 0 {
			_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		}
	})
}

// KillAll ends every plugin go-plugin still manages (for signal handlers).
func KillAll() { plugin.CleanupClients() }
