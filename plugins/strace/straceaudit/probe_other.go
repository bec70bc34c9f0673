//go:build !linux

package straceaudit

import (
	"context"

	"github.com/warden-run/warden/core/sdk"
)

// Probe answers that strace audits Linux only.
func (a *Audit) Probe(ctx context.Context, host *sdk.HostInfo) *sdk.ProbeResponse {
	return sdk.Unhealthy("the strace audit works on Linux only", nil)
}
