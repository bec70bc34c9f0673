package engine

import (
	"encoding/json"
	"time"
)

// RunSchema names the shape of run.json this engine writes.
const RunSchema = "https://warden.run/schema/run-v1.json"

// Record is run.json (DESIGN.md "Run directory"). The core rewrites it as the
// run goes (status running, then completed or failed); the seal covers the
// last version.
type Record struct {
	Schema       string          `json:"schema"`
	Kind         string          `json:"kind"` // run | preflight
	InvocationID string          `json:"invocationId"`
	Status       string          `json:"status"` // running | completed | failed
	ExitCode     int             `json:"exitCode"`
	Error        string          `json:"error,omitempty"`
	StartedAt    time.Time       `json:"startedAt"`
	EndedAt      *time.Time      `json:"endedAt,omitempty"`
	Pipeline     PipelineRef     `json:"pipeline"`
	Policy       *PipelineRef    `json:"policy,omitempty"`
	Host         HostRecord      `json:"host"`
	Confinement  bool            `json:"confinement"`
	Plugins      []PluginRecord  `json:"plugins"`
	Reclaimed    []string        `json:"reclaimed,omitempty"`
	Workspace    json.RawMessage `json:"workspace,omitempty"`
	Trials       []TrialRecord   `json:"trials"`
	// ObservedMounts is the union over trials of the accesses outside the
	// grants; non-empty means exit 3.
	ObservedMounts        []Access       `json:"observedMounts"`
	ObservedMountsChannel []ChannelEntry `json:"observedMountsChannel"`
	Score                 *ScoreRecord   `json:"score,omitempty"`
	// Files maps every file of the run directory the core wrote before this
	// version of run.json to its digest.
	Files map[string]string `json:"files"`
}

// PipelineRef is a file the run read, by path and digest.
type PipelineRef struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
	Name   string `json:"name,omitempty"`
}

// HostRecord says where the run ran.
type HostRecord struct {
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Hostname string `json:"hostname,omitempty"`
	UID      int    `json:"uid"`
	Kernel   string `json:"kernel,omitempty"`
}

// PluginRecord is one plugin that ran.
type PluginRecord struct {
	Stage      string            `json:"stage"`
	Name       string            `json:"name"`
	Version    string            `json:"version"`
	SDKVersion string            `json:"sdkVersion,omitempty"`
	Protocol   int               `json:"protocol"`
	SHA256     string            `json:"sha256"`
	Path       string            `json:"path"`
	Probe      map[string]string `json:"probe,omitempty"`
}

// TrialRecord is one trial of the target.
type TrialRecord struct {
	Index      int    `json:"index"`
	Launched   bool   `json:"launched"`
	ExitCode   int    `json:"exitCode"`
	Signal     string `json:"signal,omitempty"`
	DurationMs int64  `json:"durationMs"`
	TimedOut   bool   `json:"timedOut,omitempty"`
	// LimitExceeded names the resource limit the target exceeded, which
	// ended the trial (exit 4).
	LimitExceeded string `json:"limitExceeded,omitempty"`
	Stopped       bool   `json:"stopped,omitempty"`
	// Refused says why the target was not launched (a head that names no
	// file, an exec outside the grants).
	Refused        string          `json:"refused,omitempty"`
	Stdout         *OutputRecord   `json:"stdout,omitempty"`
	Stderr         *OutputRecord   `json:"stderr,omitempty"`
	ObservedMounts []Access        `json:"observedMounts"`
	Confinement    json.RawMessage `json:"confinement,omitempty"`
	Audit          json.RawMessage `json:"audit,omitempty"`
	Released       []string        `json:"released,omitempty"`
}

// OutputRecord is a captured stream of the target.
type OutputRecord struct {
	Path      string `json:"path"`
	Bytes     int64  `json:"bytes"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Access is one access outside the grants.
type Access struct {
	Path    string `json:"path"`
	Op      string `json:"op"`
	Syscall string `json:"syscall,omitempty"`
	PID     int32  `json:"pid,omitempty"`
	Trial   int    `json:"trial"`
	Result  string `json:"result,omitempty"`
	Rule    string `json:"rule,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Spelled string `json:"spelled,omitempty"`
}

// ChannelEntry is observedMountsChannel's entry for one audited trial
// (spec 001 "What the audit watches").
type ChannelEntry struct {
	ConditionArm      string `json:"conditionArm"`
	TrialIndex        int    `json:"trialIndex"`
	CanariesSent      int    `json:"canariesSent"`
	CanariesDelivered int    `json:"canariesDelivered"`
	LogReportedLoss   bool   `json:"logReportedLoss"`
	LogOverloaded     bool   `json:"logOverloaded"`
	Completeness      string `json:"completeness"` // complete | lossy
}

// ScoreRecord is the score the evaluator gave.
type ScoreRecord struct {
	Format   string          `json:"format"`
	Argv     []string        `json:"argv"`
	ExitCode int             `json:"exitCode"`
	Passed   int64           `json:"passed"`
	Failed   int64           `json:"failed"`
	Skipped  int64           `json:"skipped"`
	Pass     bool            `json:"pass"`
	Summary  string          `json:"summary,omitempty"`
	Details  json.RawMessage `json:"details,omitempty"`
}
