package straceaudit

import "github.com/warden-run/warden/core/grant"

// canaryTable denies exactly the canary file, so the probe sees its read
// listed the way a real judge would list it.
type canaryTable string

func (c canaryTable) Access(path string, op grant.Op) grant.Decision {
	d := grant.Decision{Subject: path, Op: op, Verdict: grant.Deny, Reason: "the probe's canary"}
	if path != string(c) {
		d.Verdict = grant.Allow
		return d
	}
	return d
}
