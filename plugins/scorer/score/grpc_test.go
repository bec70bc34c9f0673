package score_test

import (
	"context"
	"testing"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/sdk/conformance"
	"github.com/warden-run/warden/plugins/scorer/score"
)

func TestServeOverGRPC(t *testing.T) {
	conn := conformance.Dial(t, score.New())
	ctx := context.Background()

	pc := pb.NewPluginClient(conn)
	desc, err := pc.Describe(ctx, &pb.DescribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if desc.GetName() != "scorer" || desc.GetVersion() != "0.1.0" || len(desc.GetStages()) != 1 || desc.GetStages()[0] != pb.Stage_STAGE_SCORE || len(desc.GetWithSchema()) == 0 {
		t.Errorf("describe: %v", desc)
	}
	if pr, err := pc.Probe(ctx, &pb.ProbeRequest{}); err != nil || pr.GetHealth() != pb.ProbeResponse_HEALTH_HEALTHY {
		t.Errorf("probe: %v %v", pr, err)
	}
	if _, err := pc.Configure(ctx, &pb.ConfigureRequest{WithJson: []byte(`{"run":["sh","-c","exit 0"],"format":"tap"}`)}); err != nil {
		t.Fatal(err)
	}

	sc := pb.NewScoreClient(conn)
	plan, err := sc.Plan(ctx, &pb.ScorePlanRequest{Workspace: "/ws", Evaluation: "eval"})
	if err != nil {
		t.Fatal(err)
	}
	if plan.GetFormat() != "tap" || plan.GetPlan().GetDir() != "/ws" || len(plan.GetPlan().GetArgv()) != 3 {
		t.Errorf("plan: %v", plan)
	}
	res, err := sc.Parse(ctx, &pb.ScoreParseRequest{Format: plan.GetFormat(), Stdout: []byte("1..2\nok 1\nnot ok 2 - b\n"), ExitCode: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetPassed() != 1 || res.GetFailed() != 1 || res.GetPass() {
		t.Errorf("parse: %v", res)
	}
	if _, err := sc.Parse(ctx, &pb.ScoreParseRequest{Format: "junit"}); err == nil {
		t.Error("an unknown format parsed")
	}
}
