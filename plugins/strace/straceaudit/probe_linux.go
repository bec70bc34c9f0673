package straceaudit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/warden-run/warden/core/sdk"
	"github.com/warden-run/warden/plugins/strace/trace"
)

// Probe checks that strace runs here with the options Wrap uses, that
// ptrace is allowed, and that a traced read of a canary file reaches the
// trace. The probe's files live in the private root, in
// observer-probe-<pid>-<random>, removed afterwards.
func (a *Audit) Probe(ctx context.Context, host *sdk.HostInfo) *sdk.ProbeResponse {
	facts := map[string]string{}
	path, err := exec.LookPath(a.strace())
	if err != nil {
		return sdk.Unhealthy(fmt.Sprintf("strace is not installed: %v", err), facts)
	}
	facts["strace.path"] = path
	out, err := exec.CommandContext(ctx, path, "-V").Output()
	if err != nil {
		return sdk.Unhealthy(fmt.Sprintf("unable to run %s -V: %v", path, err), facts)
	}
	if m := regexp.MustCompile(`version ([0-9][0-9.]*)`).FindSubmatch(out); m != nil {
		facts["strace.version"] = string(m[1])
	}
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
		scope := strings.TrimSpace(string(b))
		facts["kernel.yama.ptrace_scope"] = scope
		if scope == "3" {
			return sdk.Unhealthy("ptrace is disabled (kernel.yama.ptrace_scope=3), so strace cannot trace", facts)
		}
	}
	root := host.GetPrivateRoot()
	if root == "" {
		root = os.TempDir()
	}
	if gone := reclaimProbes(root); len(gone) > 0 {
		facts["observer.reclaimed"] = strings.Join(gone, " ")
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	dir := filepath.Join(root, fmt.Sprintf("observer-probe-%d-%s", os.Getpid(), hex.EncodeToString(rnd[:])))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return sdk.Unhealthy(fmt.Sprintf("unable to make the probe directory %s: %v", dir, err), facts)
	}
	defer os.RemoveAll(dir)
	canary := filepath.Join(dir, "canary")
	if err := os.WriteFile(canary, []byte("canary\n"), 0o600); err != nil {
		return sdk.Unhealthy(fmt.Sprintf("unable to write the probe canary %s: %v", canary, err), facts)
	}
	cat, err := exec.LookPath("cat")
	if err != nil {
		return sdk.Unhealthy("the probe needs cat: "+err.Error(), facts)
	}
	file := filepath.Join(dir, TraceName)
	argv := trace.Argv(path, file, []string{cat, canary})
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return sdk.Unhealthy(fmt.Sprintf("strace could not trace a probe run (%v): %s", err, strings.TrimSpace(stderr.String())), facts)
	}
	f, err := os.Open(file)
	if err != nil {
		return sdk.Unhealthy(fmt.Sprintf("the probe run left no trace: %v", err), facts)
	}
	defer f.Close()
	j := &trace.Judge{Table: canaryTable(canary), Targets: [][]string{{cat, canary}}, Cwd: dir}
	rep := j.Read(f)
	if rep.Error != "" {
		return sdk.Unhealthy("the probe's trace is no evidence: "+rep.Error, facts)
	}
	for _, x := range rep.Findings {
		if x.Path == canary {
			return sdk.Healthy("strace traced the probe's canary read", facts)
		}
	}
	return sdk.Unhealthy(fmt.Sprintf("the probe's read of %s did not reach the trace", canary), facts)
}

var probeName = regexp.MustCompile(`^observer-probe-([0-9]+)-[0-9a-f]+$`)

// reclaimProbes removes the probe directories of dead processes in root and
// returns their paths. It leaves alone a link, a file, a directory of another
// mode or owner, and a live process's directory.
func reclaimProbes(root string) []string {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var gone []string
	for _, e := range ents {
		m := probeName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		p := filepath.Join(root, e.Name())
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || int(st.Uid) != os.Geteuid() {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || pid <= 0 || pid == os.Getpid() || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		if os.RemoveAll(p) == nil {
			gone = append(gone, p)
		}
	}
	return gone
}
