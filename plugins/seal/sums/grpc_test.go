package sums_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/sdk/conformance"
	"github.com/warden-run/warden/plugins/seal/sums"
)

func TestServeOverGRPC(t *testing.T) {
	conn := conformance.Dial(t, sums.New())
	ctx := context.Background()

	pc := pb.NewPluginClient(conn)
	desc, err := pc.Describe(ctx, &pb.DescribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if desc.GetName() != "seal" || desc.GetVersion() != "0.1.0" || len(desc.GetStages()) != 1 || desc.GetStages()[0] != pb.Stage_STAGE_SEAL {
		t.Errorf("describe: %v", desc)
	}
	if pr, err := pc.Probe(ctx, &pb.ProbeRequest{}); err != nil || pr.GetHealth() != pb.ProbeResponse_HEALTH_HEALTHY {
		t.Errorf("probe: %v %v", pr, err)
	}
	if _, err := pc.Configure(ctx, &pb.ConfigureRequest{WithJson: []byte("{}")}); err != nil {
		t.Fatal(err)
	}

	run := []byte(`{"status":"completed"}`)
	sum := sha256.Sum256(run)
	out := sha256.Sum256([]byte("out"))
	res, err := pb.NewSealClient(conn).Seal(ctx, &pb.SealRequest{
		InvocationId: "inv", RunJson: run,
		Files: []*pb.FileDigest{{Path: "stdout", Sha256: "sha256:" + hex.EncodeToString(out[:])}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := hex.EncodeToString(sum[:]) + "  run.json\n" + hex.EncodeToString(out[:]) + "  stdout\n"
	if len(res.GetFiles()) != 1 || res.GetFiles()[0].GetPath() != "SHA256SUMS" || string(res.GetFiles()[0].GetData()) != want {
		t.Errorf("seal: %v", res)
	}
	if _, err := pb.NewSealClient(conn).Seal(ctx, &pb.SealRequest{RunJson: run, Files: []*pb.FileDigest{{Path: "/abs", Sha256: "sha256:" + hex.EncodeToString(out[:])}}}); err == nil {
		t.Error("an absolute path was sealed")
	}
}
