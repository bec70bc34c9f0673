package bwrapplan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/warden-run/warden/plugins/bubblewrap/bwrapshim"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/warden-run/warden/core/sdk"
)

// minVersion is the oldest bwrap whose flags the plan uses (--cap-drop,
// --remount-ro, --ro-bind-try, --new-session, --die-with-parent).
var minVersion = [3]int{0, 4, 0}

// Plan returns `bwrap <view> -- <admitted path> <args>`; see the package
// comment for the view.
func (p *Plugin) Plan(ctx context.Context, spec *sdk.LaunchSpec) (*sdk.LaunchPlan, error) {
	path, err := exec.LookPath(p.bwrap())
	if err != nil {
		return nil, fmt.Errorf("the confined launch needs bwrap: %v: %w", err, sdk.ErrHostUnsupported)
	}
	version, err := p.versionOf(ctx, path)
	if err != nil {
		return nil, err
	}
	scan, err := scanSockets("/proc/net/unix", callerCred())
	if err != nil {
		return nil, err
	}
	return buildWith(path, version, spec, scan, p.planOptions())
}

// shimExe is the shim the sandbox runs: warden-bwrap-shim beside the
// plugin's binary (it starts in a few milliseconds), else the plugin's own
// binary (which serves as the shim too, but starts slower: it carries the
// plugin SDK).
var shimExe = func() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return "", err
	}
	return shimBeside(exe), nil
}

// shimBeside is warden-bwrap-shim in exe's directory when it is there, else exe.
func shimBeside(exe string) string {
	if s := filepath.Join(filepath.Dir(exe), bwrapshim.Binary); isExecutable(s) {
		return s
	}
	return exe
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// planOptions are the configured limits and what this host offers.
func (p *Plugin) planOptions() planOpts {
	o := planOpts{cfg: p.config(), cgroupV2: fileExists("/sys/fs/cgroup/cgroup.controllers")}
	if exe, err := shimExe(); err == nil {
		o.shim = exe
	}
	abi, err := bwrapshim.LandlockABI()
	switch {
	case err != nil:
		o.landlockWhy = "the kernel has no Landlock (" + err.Error() + ")"
	case abi < 1:
		o.landlockWhy = "the kernel reports Landlock ABI " + strconv.Itoa(abi)
	default:
		o.landlockABI = abi
	}
	return o
}

// versionOf reads bwrap's version once per configuration.
func (p *Plugin) versionOf(ctx context.Context, path string) (string, error) {
	p.mu.Lock()
	v, vp := p.version, p.verPath
	p.mu.Unlock()
	if v != "" && vp == path {
		return v, nil
	}
	v, _, err := readVersion(ctx, path)
	if err != nil {
		return "", err
	}
	p.remember(path, v)
	return v, nil
}

func (p *Plugin) remember(path, version string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.version, p.verPath = version, path
}

// readVersion runs `bwrap --version` ("bubblewrap 0.8.0").
func readVersion(ctx context.Context, path string) (string, [3]int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := sdk.Command(ctx, path, "--version").Output()
	if err != nil {
		return "", [3]int{}, fmt.Errorf("unable to read the version of %s: %v: %w", path, errText(err), sdk.ErrHostUnsupported)
	}
	line := strings.TrimSpace(string(out))
	v, ok := strings.CutPrefix(line, "bubblewrap ")
	n, okN := parseVersion(v)
	if !ok || !okN {
		return "", [3]int{}, fmt.Errorf("%s --version printed %q, not \"bubblewrap X.Y.Z\": %w", path, firstLine(line), sdk.ErrHostUnsupported)
	}
	return v, n, nil
}

// Probe checks that bwrap is there, recent enough, that user namespaces
// are usable and that a trial sandbox actually starts.
func (p *Plugin) Probe(ctx context.Context, _ *sdk.HostInfo) *sdk.ProbeResponse {
	facts := map[string]string{}
	name := p.bwrap()
	path, err := exec.LookPath(name)
	if err != nil {
		return sdk.Unhealthy(fmt.Sprintf("bwrap is not usable: %v (install bubblewrap, or name the binary with `with: {bwrap: /path}`)", err), facts)
	}
	facts["bwrap.path"] = path
	v, n, err := readVersion(ctx, path)
	if err != nil {
		return sdk.Unhealthy(err.Error(), facts)
	}
	facts["bwrap.version"] = v
	if cmpVersion(n, minVersion) < 0 {
		return sdk.Unhealthy(fmt.Sprintf("bwrap %s is older than %d.%d.%d, the oldest with the flags this plugin uses", v, minVersion[0], minVersion[1], minVersion[2]), facts)
	}
	setuid := false
	if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeSetuid != 0 {
		setuid = true
	}
	facts["bwrap.setuid"] = strconv.FormatBool(setuid)
	root := os.Geteuid() == 0
	clone, hasClone := sysctl("/proc/sys/kernel/unprivileged_userns_clone")
	max, hasMax := sysctl("/proc/sys/user/max_user_namespaces")
	aa, hasAA := sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
	if hasClone {
		facts["kernel.unprivileged_userns_clone"] = clone
	}
	if hasMax {
		facts["user.max_user_namespaces"] = max
	}
	if hasAA {
		facts["kernel.apparmor_restrict_unprivileged_userns"] = aa
	}
	facts["cgroup.v2"] = strconv.FormatBool(fileExists("/sys/fs/cgroup/cgroup.controllers"))
	facts["limits"] = "rlimit (cgroup delegation is not used)"
	if abi, err := bwrapshim.LandlockABI(); err == nil {
		facts["landlock.abi"] = strconv.Itoa(abi)
	} else {
		facts["landlock.abi"] = "0 (" + err.Error() + ")"
	}
	switch {
	case setuid:
		facts["userns"] = "setuid bwrap"
	case root:
		facts["userns"] = "root"
	default:
		facts["userns"] = "unprivileged"
	}
	if !setuid {
		if hasMax && max == "0" {
			return sdk.Unhealthy("user namespaces are disabled: user.max_user_namespaces=0", facts)
		}
		if !root && hasClone && clone == "0" {
			return sdk.Unhealthy("user namespaces are disabled: kernel.unprivileged_userns_clone=0", facts)
		}
	}
	if err := trial(ctx, path, n); err != nil {
		reason := "a trial sandbox did not start: " + err.Error()
		if !root && !setuid && hasAA && aa != "0" {
			reason = "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=" + aa + "); " + reason
		}
		return sdk.Unhealthy(reason, facts)
	}
	p.remember(path, v)
	return sdk.Healthy("bwrap "+v+" starts a sandbox", facts)
}

// trialArgs is the trial sandbox: every namespace, the host root
// read-only, nested user namespaces disabled where the plan disables them.
func trialArgs(v [3]int) []string {
	t := "/bin/true"
	if !fileExists(t) {
		t = "/usr/bin/true"
	}
	args := []string{"--unshare-all"}
	if cmpVersion(v, [3]int{0, 8, 0}) >= 0 {
		args = append(args, "--unshare-user", "--disable-userns")
	}
	return append(args, "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", t)
}

func trial(ctx context.Context, path string, v [3]int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args := trialArgs(v)
	cmd := sdk.Command(ctx, path, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := firstLine(strings.TrimSpace(stderr.String()))
		if msg == "" {
			msg = "no message"
		}
		return fmt.Errorf("%s %s: %v: %s", path, strings.Join(args, " "), errText(err), msg)
	}
	return nil
}

func sysctl(path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func errText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String()
	}
	return err.Error()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
