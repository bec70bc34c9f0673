package engine

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-run/warden/core/errdefs"
	"github.com/warden-run/warden/core/pipeline"
	"github.com/warden-run/warden/core/pluginhost"
	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
)

var stageProto = map[pipeline.StageKind]pb.Stage{
	pipeline.StageWorkspace: pb.Stage_STAGE_WORKSPACE,
	pipeline.StageConfine:   pb.Stage_STAGE_CONFINE,
	pipeline.StageAudit:     pb.Stage_STAGE_AUDIT,
	pipeline.StageScore:     pb.Stage_STAGE_SCORE,
	pipeline.StageSeal:      pb.Stage_STAGE_SEAL,
}

// Call deadlines. A plugin that does not answer within them hangs: exit 5.
const (
	describeTimeout  = 10 * time.Second
	probeTimeout     = 60 * time.Second
	configureTimeout = 30 * time.Second
	planTimeout      = 60 * time.Second
	buildTimeout     = 10 * time.Minute
	judgeTimeout     = 10 * time.Minute
	sealTimeout      = 2 * time.Minute
)

// stagePlugin is the plugin serving one stage of this run.
type stagePlugin struct {
	kind   pipeline.StageKind
	stage  pipeline.Stage
	plugin *pluginhost.Plugin
	probe  *pb.ProbeResponse
}

// resolved names the plugin binary for one stage on this host.
type resolved struct {
	stage pipeline.Stage
	found pluginhost.Found
}

// Resolve finds the plugin of every stage the run uses on this host. A
// stage that names no plugin for this OS is an invalid pipeline; a plugin
// that is not installed is a runtime fault naming the search path.
func Resolve(p *pipeline.Pipeline, searchPath []string) ([]resolved, error) {
	var out []resolved
	var errs []error
	for _, st := range p.ActiveStages() {
		name, ok := st.Plugin.For(runtime.GOOS)
		if !ok {
			errs = append(errs, errdefs.Errorf(errdefs.ErrInvalid, "%s: stage %s names no plugin for %s",
				posString(st.Plugin.Pos), st.Kind, runtime.GOOS))
			continue
		}
		f, err := pluginhost.Find(searchPath, name)
		if err != nil {
			errs = append(errs, errdefs.Errorf(errdefs.ErrPlugin, "%s: stage %s: %w", posString(st.Plugin.Pos), st.Kind, err))
			continue
		}
		out = append(out, resolved{stage: st, found: f})
	}
	return out, joinErrs(errs)
}

// startPlugins launches every resolved plugin at once, checks that each
// serves its stage on this host and validates its `with:` block. On error
// every plugin started is killed.
func startPlugins(ctx context.Context, rs []resolved, socketDir string, log hclog.Logger, level string) ([]*stagePlugin, error) {
	out := make([]*stagePlugin, len(rs))
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			pl, err := pluginhost.Launch(ctx, pluginhost.Options{
				Name: r.found.Name, Path: r.found.Path, SocketDir: socketDir,
				Logger: log, LogLevel: level,
			})
			log.Debug("plugin started", "plugin", r.found.Name, "took", time.Since(start))
			if err != nil {
				errs[i] = err
				return
			}
			out[i] = &stagePlugin{kind: r.stage.Kind, stage: r.stage, plugin: pl}
			errs[i] = checkStage(out[i])
		}()
	}
	wg.Wait()
	if err := joinErrs(errs); err != nil {
		killAll(out)
		return nil, err
	}
	return out, nil
}

func checkStage(sp *stagePlugin) error {
	pl := sp.plugin
	if !pl.Serves(stageProto[sp.kind]) {
		return errdefs.Errorf(errdefs.ErrInvalid, "%s: plugin %s does not serve the %s stage (it serves %v)",
			posString(sp.stage.Plugin.Pos), pl.Name, sp.kind, pl.Desc.GetStages())
	}
	if !pl.SupportsHost(runtime.GOOS, runtime.GOARCH) {
		return errdefs.Errorf(errdefs.ErrHostUnsupported, "%s: plugin %s does not run on %s/%s",
			posString(sp.stage.Plugin.Pos), pl.Name, runtime.GOOS, runtime.GOARCH)
	}
	return ValidateWith(sp.stage, pl.Name, pl.Desc.GetWithSchema())
}

// probeAndConfigure probes every plugin (a plugin that is not healthy stops
// the run with 12, naming it and its reason) and hands it its `with:`.
//
// ready is called for each plugin once it is configured.
func probeAndConfigure(ctx context.Context, log hclog.Logger, sps []*stagePlugin, host *pb.HostInfo, invocation string, privateDir func(string) (string, error), ready func(*stagePlugin)) error {
	errs := make([]error, len(sps))
	var wg sync.WaitGroup
	for i, sp := range sps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = probeOne(ctx, log, sp, host, invocation, privateDir); errs[i] == nil {
				ready(sp)
			}
		}()
	}
	wg.Wait()
	return joinErrs(errs)
}

func probeOne(ctx context.Context, log hclog.Logger, sp *stagePlugin, host *pb.HostInfo, invocation string, privateDir func(string) (string, error)) error {
	pl := sp.plugin
	c := pb.NewPluginClient(pl.Conn())
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	start := time.Now()
	pr, err := c.Probe(pctx, &pb.ProbeRequest{Host: host})
	log.Debug("plugin probed", "plugin", pl.Name, "took", time.Since(start))
	if err != nil {
		return pl.CallError(pctx, "Probe", err)
	}
	sp.probe = pr
	if pr.GetHealth() != pb.ProbeResponse_HEALTH_HEALTHY {
		reason := pr.GetReason()
		if reason == "" {
			reason = "no reason given"
		}
		return errdefs.Errorf(errdefs.ErrHostUnsupported, "plugin %s (%s stage) cannot work on this host: %s", pl.Name, sp.kind, reason)
	}
	dir, err := privateDir("plugin-" + pl.Name)
	if err != nil {
		return err
	}
	cctx, cancel2 := context.WithTimeout(ctx, configureTimeout)
	defer cancel2()
	_, err = c.Configure(cctx, &pb.ConfigureRequest{WithJson: sp.stage.With, InvocationId: invocation, PrivateDir: dir, Host: host})
	if err != nil {
		return fmt.Errorf("%s: %w", posString(sp.stage.Pos), pl.CallError(cctx, "Configure", err))
	}
	return nil
}

func killAll(sps []*stagePlugin) {
	var wg sync.WaitGroup
	for _, sp := range sps {
		if sp == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sp.plugin.Kill()
		}()
	}
	wg.Wait()
}

func pluginRecords(sps []*stagePlugin) []PluginRecord {
	var out []PluginRecord
	for _, sp := range sps {
		d := sp.plugin.Desc
		out = append(out, PluginRecord{
			Stage: string(sp.kind), Name: sp.plugin.Name, Version: d.GetVersion(),
			SDKVersion: d.GetSdkVersion(), Protocol: 1, SHA256: sp.plugin.SHA256,
			Path: sp.plugin.Path, Probe: sp.probe.GetFacts(),
		})
	}
	return out
}

func hostInfo(root string) *pb.HostInfo {
	home, _ := os.UserHomeDir()
	return &pb.HostInfo{
		Goos: runtime.GOOS, Goarch: runtime.GOARCH,
		Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()),
		Home: home, PrivateRoot: root,
	}
}
