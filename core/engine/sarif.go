package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// SARIF 2.1.0 for the audit's findings, so CI code scanning shows each
// access outside the grants as an alert. Behaviour has no source line of
// its own, so every result points at the line of the pipeline that declared
// the grants it broke (research/eval-anchors.md §3.3).

const sarifSchema = "https://json.schemastore.org/sarif-2.1.0.json"

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool        sarifTool         `json:"tool"`
	Invocations []sarifInvocation `json:"invocations"`
	Results     []sarifResult     `json:"results"`
	Automation  map[string]string `json:"automationDetails"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID               string            `json:"id"`
	Name             string            `json:"name"`
	ShortDescription sarifText         `json:"shortDescription"`
	FullDescription  sarifText         `json:"fullDescription"`
	Default          map[string]string `json:"defaultConfiguration"`
	Properties       map[string]any    `json:"properties"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifInvocation struct {
	ExecutionSuccessful bool `json:"executionSuccessful"`
	ExitCode            int  `json:"exitCode"`
}

type sarifResult struct {
	RuleID       string            `json:"ruleId"`
	RuleIndex    int               `json:"ruleIndex"`
	Level        string            `json:"level"`
	Message      sarifText         `json:"message"`
	Locations    []sarifLocation   `json:"locations"`
	Fingerprints map[string]string `json:"partialFingerprints"`
}

type sarifLocation struct {
	Physical sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	Artifact map[string]string `json:"artifactLocation"`
	Region   map[string]int    `json:"region"`
}

var sarifOps = []struct{ op, what string }{
	{"read", "read a file outside its grants"},
	{"write", "wrote a file outside its workspace, call directories and granted write paths"},
	{"exec", "ran a program its grants do not admit"},
	{"connect", "connected to a host Unix socket outside its grants"},
	{"mount", "mounted a source outside its grants"},
}

// auditSARIF renders the observed accesses of rec as SARIF. uri is the
// pipeline file as code scanning should show it (relative to the
// repository when the pipeline lives in it); line and col are where its
// grants are declared.
func auditSARIF(rec *Record, version, uri string, line, col int) sarifLog {
	rules := make([]sarifRule, 0, len(sarifOps))
	index := map[string]int{}
	for i, o := range sarifOps {
		id := "warden/access-" + o.op
		index[o.op] = i
		rules = append(rules, sarifRule{
			ID: id, Name: "AccessOutsideGrants" + strings.ToUpper(o.op[:1]) + o.op[1:],
			ShortDescription: sarifText{"The target " + o.what + "."},
			FullDescription: sarifText{"warden's audit observed the target " + o.what +
				". Grant the path in the pipeline's grants if the access is expected, or fix the target."},
			Default:    map[string]string{"level": "error"},
			Properties: map[string]any{"tags": []string{"security", "sandbox"}, "security-severity": "7.0"},
		})
	}
	if line < 1 {
		line, col = 1, 1
	}
	if col < 1 {
		col = 1
	}
	results := []sarifResult{}
	accs := append([]Access(nil), rec.ObservedMounts...)
	sort.SliceStable(accs, func(i, j int) bool {
		if accs[i].Op != accs[j].Op {
			return accs[i].Op < accs[j].Op
		}
		return accs[i].Path < accs[j].Path
	})
	for _, a := range accs {
		i, ok := index[a.Op]
		if !ok {
			i = index["read"]
		}
		msg := fmt.Sprintf("Trial %d: %s %s outside the grants (syscall %s", a.Trial, a.Op, a.Path, a.Syscall)
		if a.PID != 0 {
			msg += fmt.Sprintf(", pid %d", a.PID)
		}
		msg += ")"
		if a.Rule != "" {
			msg += "; deciding rule: " + a.Rule
		}
		if a.Reason != "" {
			msg += "; " + a.Reason
		}
		sum := sha256.Sum256([]byte(a.Op + "\x00" + a.Path))
		results = append(results, sarifResult{
			RuleID: rules[i].ID, RuleIndex: i, Level: "error", Message: sarifText{msg},
			Locations: []sarifLocation{{Physical: sarifPhysical{
				Artifact: map[string]string{"uri": uri},
				Region:   map[string]int{"startLine": line, "startColumn": col},
			}}},
			Fingerprints: map[string]string{"wardenAccess/v1": hex.EncodeToString(sum[:16])},
		})
	}
	return sarifLog{Schema: sarifSchema, Version: "2.1.0", Runs: []sarifRun{{
		Tool: sarifTool{Driver: sarifDriver{Name: "warden", Version: version,
			InformationURI: "https://warden.run", Rules: rules}},
		Invocations: []sarifInvocation{{ExecutionSuccessful: rec.Status == "completed", ExitCode: rec.ExitCode}},
		Results:     results,
		Automation:  map[string]string{"id": "warden/" + rec.Pipeline.Name + "/"},
	}}}
}

// sarifURI is the pipeline's path relative to the repository under
// evaluation when it lives inside it, else its absolute path.
func sarifURI(pipelinePath, repo string) string {
	if rel, err := filepath.Rel(repo, pipelinePath); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return "file://" + filepath.ToSlash(pipelinePath)
}
