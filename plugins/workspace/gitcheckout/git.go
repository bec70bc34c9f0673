package gitcheckout

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/warden-run/warden/core/sdk"
)

// gitEnv is the environment of every git helper: the plugin's own, without
// any GIT_* variable (GIT_DIR, GIT_INDEX_FILE, GIT_OBJECT_DIRECTORY… would
// point git somewhere else than the repository we name), plus the extras.
// GIT_OPTIONAL_LOCKS=0 keeps even a stray index refresh away from the
// user's repository; GIT_TERMINAL_PROMPT=0 keeps git from waiting on a tty.
func gitEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0")
	return append(env, extra...)
}

// git runs `git -C dir args…` with env and returns its trimmed stdout. A
// failure carries git's stderr so the message says what git objected to.
func git(ctx context.Context, env []string, dir string, args ...string) (string, error) {
	cmd := gitCmd(ctx, env, dir, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", gitError(args, &stderr, err)
	}
	return strings.TrimRight(stdout.String(), "\n"), nil
}

func gitCmd(ctx context.Context, env []string, dir string, args ...string) *exec.Cmd {
	cmd := sdk.Command(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = env
	cmd.Stdin = nil
	return cmd
}

func gitError(args []string, stderr *bytes.Buffer, err error) error {
	msg := strings.TrimSpace(stderr.String())
	if msg == "" {
		return fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, msg)
}
