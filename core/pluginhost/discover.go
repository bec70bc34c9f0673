// Package pluginhost finds, launches and talks to warden plugin binaries
// (DESIGN.md "Plugin protocol"). It owns each plugin process: its process
// group, its environment, its socket directory, its stderr, its death.
package pluginhost

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Prefix is the file-name prefix of every plugin binary.
const Prefix = "warden-plugin-"

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// ValidName reports whether name can name a plugin.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// SearchPath returns the directories searched for plugins, in order:
// $WARDEN_PLUGIN_PATH (colon-separated), the directory of the warden binary,
// then $XDG_DATA_HOME/warden/plugins (~/.local/share/warden/plugins).
func SearchPath() []string {
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv("WARDEN_PLUGIN_PATH")) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	if exe, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		dirs = append(dirs, filepath.Dir(exe))
	}
	data := os.Getenv("XDG_DATA_HOME")
	if data == "" {
		if home, err := os.UserHomeDir(); err == nil {
			data = filepath.Join(home, ".local", "share")
		}
	}
	if data != "" {
		dirs = append(dirs, filepath.Join(data, "warden", "plugins"))
	}
	return dedupe(dirs)
}

func dedupe(dirs []string) []string {
	seen := map[string]bool{}
	out := dirs[:0]
	for _, d := range dirs {
		c := filepath.Clean(d)
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// Found is a plugin binary found on the search path.
type Found struct {
	Name     string
	Path     string   // the copy that wins (first in search order)
	Shadowed []string // later copies of the same name, which are not used
}

// Skipped is a file that looks like a plugin but cannot be one.
type Skipped struct {
	Path   string
	Reason string
}

// Discover lists every plugin on dirs. Only regular, executable files named
// warden-plugin-<name> count; the first in search order wins and the others
// are listed as shadowed. Files that look like plugins but are not usable
// are returned as skipped with the reason.
func Discover(dirs []string) ([]Found, []Skipped) {
	byName := map[string]*Found{}
	var order []string
	var skipped []Skipped
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), Prefix) {
				continue
			}
			p := filepath.Join(dir, e.Name())
			name := strings.TrimPrefix(e.Name(), Prefix)
			if why := unusable(p, name); why != "" {
				skipped = append(skipped, Skipped{Path: p, Reason: why})
				continue
			}
			if f, ok := byName[name]; ok {
				f.Shadowed = append(f.Shadowed, p)
				continue
			}
			byName[name] = &Found{Name: name, Path: p}
			order = append(order, name)
		}
	}
	sort.Strings(order)
	out := make([]Found, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	return out, skipped
}

func unusable(p, name string) string {
	if !ValidName(name) {
		return fmt.Sprintf("%q is not a plugin name (lower-case letters, digits and '-')", name)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return err.Error()
	}
	if !fi.Mode().IsRegular() {
		return "not a regular file"
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return "not executable"
	}
	return ""
}

// Find returns the plugin called name on dirs, or an error that lists
// where it looked.
func Find(dirs []string, name string) (Found, error) {
	if !ValidName(name) {
		return Found{}, fmt.Errorf("%q is not a plugin name", name)
	}
	var found *Found
	for _, dir := range dirs {
		p := filepath.Join(dir, Prefix+name)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if why := unusable(p, name); why != "" {
			return Found{}, fmt.Errorf("plugin %s at %s is unusable: %s", name, p, why)
		}
		if found == nil {
			found = &Found{Name: name, Path: p}
		} else {
			found.Shadowed = append(found.Shadowed, p)
		}
	}
	if found == nil {
		return Found{}, fmt.Errorf("plugin %s not found: no executable %s%s in %s (set WARDEN_PLUGIN_PATH or run `make build`)",
			name, Prefix, name, strings.Join(dirs, ":"))
	}
	return *found, nil
}

// FileSHA256 returns "sha256:<hex>" of the file at p.
func FileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
