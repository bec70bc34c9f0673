package grant

import (
	"fmt"
	"strings"
)

// String renders a position as "file:line:col", dropping what is unknown.
// The zero Pos renders as "".
func (p Pos) String() string {
	switch {
	case p.File == "" && p.Line == 0:
		return ""
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Source is where a rule came from: a key a layer authored, or a place the
// runtime supplies (the workspace, a call directory, a system root).
type Source struct {
	Layer string // "pipeline", "policy", or "runtime" for places and system roots
	Field string // "grants.exec.deny", "grants.read", "workspace", "system root"…
	Key   string // the key as written ("git", "~/bin/x", "@path"); may be empty for places
	Pos   Pos    // zero for runtime places
}

// String renders `pipeline grants.exec.deny "curl", pipeline.yaml:12:9`.
func (s Source) String() string {
	var b strings.Builder
	b.WriteString(s.Layer)
	if s.Field != "" {
		b.WriteString(" " + s.Field)
	}
	if s.Key != "" {
		fmt.Fprintf(&b, " %q", s.Key)
	}
	if ps := s.Pos.String(); ps != "" {
		b.WriteString(", " + ps)
	}
	return b.String()
}

// RuleKind says what a rule's target is.
type RuleKind uint8

const (
	RuleNone    RuleKind = iota // no rule: the default deny
	RuleDir                     // an exec directory key: programs beneath it
	RuleFile                    // an exec file key: that file
	RuleTool                    // a bundled tool, by name
	RuleVeto                    // a vetoed command name, everywhere
	RulePlace                   // a file-access prefix: the path and everything beneath it
	RuleSpecial                 // a pseudo-file-system rule (/proc, /dev, /sys)
)

// String renders the kind as explain prints it ("dir", "veto", "path"…).
func (k RuleKind) String() string {
	return [...]string{"none", "dir", "file", "tool", "veto", "path", "special"}[k]
}

// Rule is one rule of a compiled table, as a Decision reports it.
type Rule struct {
	Kind    RuleKind
	Target  string  // the frozen real path, the tool name, or the veto's name key
	Verdict Verdict // what the rule itself says
	Rank    Rank
	Sources []Source // every authored key or place that made it (a met rule has several); shared with the table, read only
}

// String renders `deny dir /x/tools/evil`.
func (r Rule) String() string {
	if r.Kind == RuleNone {
		return "no rule"
	}
	return fmt.Sprintf("%s %s %s", r.Verdict, r.Kind, r.Target)
}

// Decision is a verdict with the rule that decided it, for an exec question
// (Op == OpExec, Subject the program) or a file access.
type Decision struct {
	Subject string  // the program (real path or tool name) or the accessed path
	Op      Op      // OpExec for programs
	Verdict Verdict // the answer
	Rule    Rule    // the deciding rule; Kind RuleNone when no rule spoke
	// Respelled is set on a denial whose deciding deny holds the subject
	// only under another spelling: it is that deny's spelling, so the message
	// can name what was actually denied.
	Respelled string
	Reason    string // why the rule decided, for operators
}

// Allowed reports whether the verdict is not Deny (an Only is allowed
// subject to its arguments).
func (d Decision) Allowed() bool { return !d.Verdict.IsDeny() }

// String renders the decision for operators, e.g.
//
//	deny: /x/Tools/evil/t — rule "deny dir /x/tools/evil" (pipeline grants.exec.deny "/x/tools/evil/", pipeline.yaml:12:9, rank dir(3)); matched as respelled "/x/tools/evil"
func (d Decision) String() string {
	var b strings.Builder
	b.WriteString(d.Verdict.String() + ": ")
	if d.Op != OpExec {
		b.WriteString(d.Op.String() + " ")
	}
	b.WriteString(d.Subject)
	if d.Rule.Kind == RuleNone {
		b.WriteString(" — no rule matches")
	} else {
		fmt.Fprintf(&b, " — rule %q (", d.Rule.String())
		for i, s := range d.Rule.Sources {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(s.String() + ", ")
		}
		fmt.Fprintf(&b, "rank %s)", d.Rule.Rank)
	}
	if d.Respelled != "" {
		fmt.Fprintf(&b, "; matched as respelled %q", d.Respelled)
	}
	if d.Reason != "" {
		b.WriteString("; " + d.Reason)
	}
	return b.String()
}
