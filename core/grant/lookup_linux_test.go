package grant

import "testing"

// A lookup of a magic link itself (readlink of /proc/self/fd/0, as ttyname
// does; a stat of /proc/<pid>/cwd) goes nowhere and is allowed on Linux;
// reading or writing through it, or looking up beneath it, is not.
func TestAccessLookupMagicLinkItself(t *testing.T) {
	tb, err := Compile(Places{}, Tools{}, Layer{Name: "pipeline"})
	if err != nil {
		t.Fatal(err)
	}
	checkAccess(t, tb.Files, []accessCase{
		{"/proc/self/status", OpLookup, true, "", ""},
		{"/proc/self/root/etc/x", OpLookup, false, "pseudo-file system", ""}, // through a magic link: anywhere
		{"/proc/1/cwd/x", OpLookup, false, "pseudo-file system", ""},
		{"/proc/self/fd/3/x", OpLookup, false, "pseudo-file system", ""},
		{"/proc/self/map_files/7f00-7f01/x", OpLookup, false, "pseudo-file system", ""},
		{"/dev/fd/3/x", OpLookup, false, "pseudo-file system", ""},
		{"/proc/self/root/etc/x", OpRead, false, "pseudo-file system", ""},
		{"/dev", OpLookup, true, "pseudo-file system", ""}, // the way to /dev/null
		{"/dev/sda", OpLookup, false, "", ""},
		{"/sys", OpLookup, true, "pseudo-file system", ""},
		{"/sys/firmware", OpLookup, false, "", ""},
		{"/proc/self/fd/0", OpLookup, true, "pseudo-file system", ""},
		{"/proc/12/task/13/fd/7", OpLookup, true, "pseudo-file system", ""},
		{"/proc/self/cwd", OpLookup, true, "pseudo-file system", ""},
		{"/proc/1/root", OpLookup, true, "pseudo-file system", ""},
		{"/proc/self/map_files/7f00-7f01", OpLookup, true, "pseudo-file system", ""},
		{"/dev/fd/5", OpLookup, true, "pseudo-file system", ""},
		{"/proc/self/fd/0", OpRead, false, "pseudo-file system", ""},
		{"/proc/self/cwd", OpRead, false, "pseudo-file system", ""},
		{"/dev/fd/5", OpRead, false, "pseudo-file system", ""},
		{"/proc/self/cwd/x", OpLookup, false, "pseudo-file system", ""},
		{"/proc/self/fd/0/x", OpLookup, false, "pseudo-file system", ""},
	})
}
