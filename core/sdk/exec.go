package sdk

import (
	"context"
	"os/exec"
	"time"
)

// Command is exec.CommandContext for a plugin's own helper processes (git
// in a workspace plugin, a version probe). The helper stays in the plugin's
// process group, so the core's group kill ends it with the plugin; on Linux
// it also dies with the plugin (Pdeathsig); and it is killed when ctx, the
// call's context, ends. Its environment is the plugin's (the core's
// allowlist) unless the caller sets cmd.Env.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 2 * time.Second
	setPdeathsig(cmd)
	return cmd
}
