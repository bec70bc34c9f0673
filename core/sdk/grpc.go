package sdk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/warden-run/warden/core/errdefs"
	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
)

// PluginKey is the single entry of warden's go-plugin PluginSet: one
// connection carries the Plugin service and every stage service the binary
// implements.
const PluginKey = "warden"

// MaxMessageSize caps every gRPC message in both directions; trace bytes
// travel in chunks well below it.
const MaxMessageSize = 16 << 20

// PluginSet is the go-plugin set that serves p. The core uses
// PluginSet(nil) on its side, where only the client half is used.
func PluginSet(p Plugin) plugin.PluginSet {
	return plugin.PluginSet{PluginKey: &grpcPlugin{impl: p}}
}

// Conn is what the core gets from go-plugin's Dispense: the connection to
// the plugin's services.
type Conn struct {
	*grpc.ClientConn
}

type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	impl Plugin
}

func (g *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	p := g.impl
	pb.RegisterPluginServer(s, &pluginServer{p: p})
	if w, ok := p.(Workspacer); ok {
		pb.RegisterWorkspaceServer(s, &workspaceServer{w: w})
	}
	if c, ok := p.(Confiner); ok {
		pb.RegisterConfineServer(s, &confineServer{c: c})
	}
	if a, ok := p.(Auditor); ok {
		pb.RegisterAuditServer(s, &auditServer{a: a})
	}
	if sc, ok := p.(Scorer); ok {
		pb.RegisterScoreServer(s, &scoreServer{s: sc})
	}
	if se, ok := p.(Sealer); ok {
		pb.RegisterSealServer(s, &sealServer{s: se})
	}
	return nil
}

func (g *grpcPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &Conn{ClientConn: c}, nil
}

// newGRPCServer installs the interceptors that turn a panic into a
// codes.Internal answer (with the stack in the log) and a classed error
// into its status code.
func newGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	opts = append(opts,
		grpc.MaxRecvMsgSize(MaxMessageSize),
		grpc.MaxSendMsgSize(MaxMessageSize),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
			defer recoverInto(info.FullMethod, &err)
			resp, err = h(ctx, req)
			return resp, errdefs.ToGRPC(err)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
			defer recoverInto(info.FullMethod, &err)
			return errdefs.ToGRPC(h(srv, ss))
		}),
	)
	return grpc.NewServer(opts...)
}

func recoverInto(method string, err *error) {
	if r := recover(); r != nil {
		logger.Error("panic in plugin call", "method", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		*err = status.Errorf(codes.Internal, "plugin panicked in %s: %v", method, r)
	}
}

type pluginServer struct {
	pb.UnimplementedPluginServer
	p Plugin
}

// Describe completes the plugin's Description with what the SDK knows.
func (s *pluginServer) Describe(context.Context, *pb.DescribeRequest) (*pb.Description, error) {
	return Describe(s.p), nil
}

// Describe returns p's Description as it goes on the wire.
func Describe(p Plugin) *pb.Description {
	d := p.Describe()
	return &pb.Description{
		Name:             d.Name,
		Version:          d.Version,
		Summary:          d.Summary,
		Stages:           StageOf(p),
		ProtocolVersions: []uint32{ProtocolVersion},
		Platforms:        d.Platforms,
		WithSchema:       d.WithSchema,
		Capabilities:     d.Capabilities,
		SdkVersion:       Version,
	}
}

func (s *pluginServer) Probe(ctx context.Context, req *pb.ProbeRequest) (*pb.ProbeResponse, error) {
	r := s.p.Probe(ctx, req.GetHost())
	if r == nil {
		r = Unhealthy("the plugin's probe returned no answer", nil)
	}
	return r, nil
}

func (s *pluginServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	if c, ok := s.p.(Configurer); ok {
		if err := c.Configure(ctx, req); err != nil {
			return nil, err
		}
	}
	return &pb.ConfigureResponse{}, nil
}

func (s *pluginServer) Close(ctx context.Context, _ *pb.CloseRequest) (*pb.CloseResponse, error) {
	if c, ok := s.p.(Closer); ok {
		if err := c.Close(ctx); err != nil {
			return nil, err
		}
	}
	return &pb.CloseResponse{}, nil
}

type workspaceServer struct {
	pb.UnimplementedWorkspaceServer
	w Workspacer
}

func (s *workspaceServer) Build(ctx context.Context, req *pb.BuildRequest) (*pb.BuildResponse, error) {
	return s.w.Build(ctx, req)
}

type confineServer struct {
	pb.UnimplementedConfineServer
	c Confiner
}

func (s *confineServer) Plan(ctx context.Context, req *pb.PlanRequest) (*pb.PlanResponse, error) {
	plan, err := s.c.Plan(ctx, req.GetSpec())
	if err != nil {
		return nil, err
	}
	return &pb.PlanResponse{Plan: plan}, nil
}

func (s *confineServer) Release(ctx context.Context, req *pb.ReleaseRequest) (*pb.ReleaseResponse, error) {
	r, ok := s.c.(Releaser)
	if !ok {
		return &pb.ReleaseResponse{}, nil
	}
	removed, err := r.Release(ctx, req.GetCleanup())
	if err != nil {
		return nil, err
	}
	return &pb.ReleaseResponse{Removed: removed}, nil
}

type auditServer struct {
	pb.UnimplementedAuditServer
	a Auditor
}

func (s *auditServer) Wrap(ctx context.Context, req *pb.WrapRequest) (*pb.WrapResponse, error) {
	return s.a.Wrap(ctx, req)
}

// Judge reads the header, then hands the implementation a reader per trace
// file that pulls chunks off the stream as it reads.
func (s *auditServer) Judge(stream pb.Audit_JudgeServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	h := first.GetHeader()
	if h == nil {
		return fmt.Errorf("judge stream must start with a header: %w", ErrInvalidConfig)
	}
	in := &chunkStream{recv: stream.Recv}
	obs := &Observations{Header: h, next: in.next}
	f, err := s.a.Judge(stream.Context(), obs)
	if err != nil {
		return err
	}
	return stream.SendAndClose(f)
}

// chunkStream turns the stream of chunks into one reader per file. Chunks
// of a file arrive in order and its last chunk has eof set.
type chunkStream struct {
	recv    func() (*pb.JudgeInput, error)
	cur     *fileReader
	pending *pb.TraceChunk
	done    bool
}

func (c *chunkStream) next() (string, io.Reader, error) {
	if c.cur != nil {
		if _, err := io.Copy(io.Discard, c.cur); err != nil {
			return "", nil, err
		}
		c.cur = nil
	}
	if c.done {
		return "", nil, io.EOF
	}
	ch, err := c.chunk()
	if err != nil {
		return "", nil, err
	}
	if ch == nil {
		c.done = true
		return "", nil, io.EOF
	}
	c.cur = &fileReader{s: c, name: ch.GetFile()}
	c.pending = ch
	return ch.GetFile(), c.cur, nil
}

func (c *chunkStream) chunk() (*pb.TraceChunk, error) {
	if c.pending != nil {
		ch := c.pending
		c.pending = nil
		return ch, nil
	}
	in, err := c.recv()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ch := in.GetChunk()
	if ch == nil {
		return nil, fmt.Errorf("judge stream: a second header arrived: %w", ErrInvalidConfig)
	}
	return ch, nil
}

type fileReader struct {
	s    *chunkStream
	name string
	buf  []byte
	eof  bool
}

func (r *fileReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.eof {
			return 0, io.EOF
		}
		ch, err := r.s.chunk()
		if err != nil {
			return 0, err
		}
		if ch == nil {
			return 0, fmt.Errorf("judge stream ended inside %s: %w", r.name, io.ErrUnexpectedEOF)
		}
		if ch.GetFile() != r.name {
			return 0, fmt.Errorf("judge stream: chunk of %s inside %s: %w", ch.GetFile(), r.name, ErrInvalidConfig)
		}
		r.buf, r.eof = ch.GetData(), ch.GetEof()
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

type scoreServer struct {
	pb.UnimplementedScoreServer
	s Scorer
}

func (s *scoreServer) Plan(ctx context.Context, req *pb.ScorePlanRequest) (*pb.ScorePlanResponse, error) {
	return s.s.PlanScore(ctx, req)
}

func (s *scoreServer) Parse(ctx context.Context, req *pb.ScoreParseRequest) (*pb.ScoreResult, error) {
	return s.s.Parse(ctx, req)
}

type sealServer struct {
	pb.UnimplementedSealServer
	s Sealer
}

func (s *sealServer) Seal(ctx context.Context, req *pb.SealRequest) (*pb.SealResponse, error) {
	return s.s.Seal(ctx, req)
}
