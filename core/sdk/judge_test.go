package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/go-plugin"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
)

// countingAuditor reports, per trace file, how many bytes it read, reading
// only the first byte of files named "partial*" (Next must skip the rest).
type countingAuditor struct{}

func (countingAuditor) Describe() Description { return Description{Name: "counting", Version: "1.0.0"} }
func (countingAuditor) Probe(context.Context, *HostInfo) *ProbeResponse {
	return Healthy("", nil)
}
func (countingAuditor) Wrap(context.Context, *WrapRequest) (*WrapResponse, error) {
	return nil, errors.New("unused")
}
func (countingAuditor) Judge(_ context.Context, obs *Observations) (*Findings, error) {
	f := &Findings{Completeness: pb.Completeness_COMPLETENESS_COMPLETE}
	for {
		name, r, err := obs.Next()
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil {
			return nil, err
		}
		var n int64
		if strings.HasPrefix(name, "partial") {
			b := make([]byte, 1)
			m, _ := r.Read(b)
			n = int64(m)
		} else if n, err = io.Copy(io.Discard, r); err != nil {
			return nil, err
		}
		f.Accesses = append(f.Accesses, &pb.Access{Path: name, Result: fmt.Sprint(n)})
		f.Lines++
	}
}

func TestJudgeStreamsEveryFileInOrder(t *testing.T) {
	client, _ := plugin.TestPluginGRPCConn(t, false, PluginSet(countingAuditor{}))
	defer client.Close()
	raw, err := client.Dispense(PluginKey)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := pb.NewAuditClient(raw.(*Conn).ClientConn).Judge(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	send := func(in *pb.JudgeInput) {
		t.Helper()
		if err := stream.Send(in); err != nil {
			t.Fatal(err)
		}
	}
	chunk := func(file, data string, eof bool) *pb.JudgeInput {
		return &pb.JudgeInput{Part: &pb.JudgeInput_Chunk{Chunk: &pb.TraceChunk{File: file, Data: []byte(data), Eof: eof}}}
	}
	send(&pb.JudgeInput{Part: &pb.JudgeInput_Header{Header: &pb.JudgeHeader{TraceFiles: []string{"a", "partial", "b"}}}})
	send(chunk("a", "hello ", false))
	send(chunk("a", "world", true))
	send(chunk("partial", "xyz", false))
	send(chunk("partial", "uvw", true))
	send(chunk("b", "", true))
	f, err := stream.CloseAndRecv()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a=11", "partial=1", "b=0"}
	if len(f.GetAccesses()) != len(want) {
		t.Fatalf("findings %v, want %v", f.GetAccesses(), want)
	}
	for i, a := range f.GetAccesses() {
		if got := a.GetPath() + "=" + a.GetResult(); got != want[i] {
			t.Errorf("file %d: %s, want %s", i, got, want[i])
		}
	}
}

func TestJudgeStreamMustStartWithHeader(t *testing.T) {
	client, _ := plugin.TestPluginGRPCConn(t, false, PluginSet(countingAuditor{}))
	defer client.Close()
	raw, _ := client.Dispense(PluginKey)
	stream, err := pb.NewAuditClient(raw.(*Conn).ClientConn).Judge(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.Send(&pb.JudgeInput{Part: &pb.JudgeInput_Chunk{Chunk: &pb.TraceChunk{File: "a", Eof: true}}})
	if _, err := stream.CloseAndRecv(); err == nil || !strings.Contains(err.Error(), "header") {
		t.Fatalf("a stream without a header must be refused, got %v", err)
	}
}

func TestJudgeStreamEndingInsideAFileIsAnError(t *testing.T) {
	client, _ := plugin.TestPluginGRPCConn(t, false, PluginSet(countingAuditor{}))
	defer client.Close()
	raw, _ := client.Dispense(PluginKey)
	stream, _ := pb.NewAuditClient(raw.(*Conn).ClientConn).Judge(context.Background())
	_ = stream.Send(&pb.JudgeInput{Part: &pb.JudgeInput_Header{Header: &pb.JudgeHeader{}}})
	_ = stream.Send(&pb.JudgeInput{Part: &pb.JudgeInput_Chunk{Chunk: &pb.TraceChunk{File: "a", Data: []byte("x")}}})
	if _, err := stream.CloseAndRecv(); err == nil || !strings.Contains(err.Error(), "ended inside a") {
		t.Fatalf("a truncated stream must fail the judge, got %v", err)
	}
}
