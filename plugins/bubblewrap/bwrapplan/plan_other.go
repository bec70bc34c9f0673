//go:build !linux

package bwrapplan

import (
	"context"
	"fmt"
	"runtime"

	"github.com/warden-run/warden/core/sdk"
)

// Plan refuses: bubblewrap confines on Linux only.
func (*Plugin) Plan(context.Context, *sdk.LaunchSpec) (*sdk.LaunchPlan, error) {
	return nil, fmt.Errorf("bubblewrap confines on Linux only, not %s: %w", runtime.GOOS, sdk.ErrHostUnsupported)
}

// Probe says the host is unsupported.
func (*Plugin) Probe(context.Context, *sdk.HostInfo) *sdk.ProbeResponse {
	return sdk.Unhealthy(fmt.Sprintf("bubblewrap confines on Linux only, not %s", runtime.GOOS), nil)
}
