package grant

import "testing"

func TestAccessSystemAndPseudo(t *testing.T) {
	tb, err := Compile(Places{}, Tools{}, Layer{Name: "pipeline"})
	if err != nil {
		t.Fatal(err)
	}
	usr := freeze("/usr/lib")
	checkAccess(t, tb.Files, []accessCase{
		{usr + "/x86_64-linux-gnu/libc.so.6", OpRead, true, "system root", ""},
		{usr + "/libc.so.6", OpWrite, false, "", ""},
		{freeze("/etc") + "/ld.so.cache", OpRead, true, "system configuration", ""},
		{freeze("/etc") + "/ld.so.cache", OpWrite, false, "", ""},
		{"/proc/self/status", OpRead, true, "", ""},
		{"/proc/cpuinfo", OpRead, true, "", ""},
		{"/proc/self/fd", OpRead, true, "", ""},
		{"/proc/self/exe", OpRead, true, "", ""},
		{"/proc/1/root", OpRead, false, "pseudo-file system", ""},
		{"/proc/1/root/etc/shadow", OpRead, false, "pseudo-file system", ""},
		{"/proc/self/cwd/x", OpRead, false, "pseudo-file system", ""},
		{"/proc/self/fd/3", OpRead, false, "pseudo-file system", ""},
		{"/proc/thread-self/fd/3", OpWrite, false, "pseudo-file system", ""},
		{"/proc/12/task/13/fd/1", OpRead, false, "pseudo-file system", ""},
		{"/proc/self/map_files/7f00-7f01", OpRead, false, "pseudo-file system", ""},
		{"/proc/self/task/9/comm", OpWrite, true, "pseudo-file system", ""},
		{"/proc/self/mem", OpWrite, false, "", ""},
		{"/proc/sys/kernel/core_pattern", OpWrite, false, "", ""},
		{"/sys/kernel/mm/transparent_hugepage/enabled", OpRead, true, "pseudo-file system", ""},
		{"/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", OpRead, true, "pseudo-file system", ""},
		{"/sys/fs/cgroup/cpu.max", OpRead, true, "pseudo-file system", ""},
		{"/sys/devices/system/cpu/online", OpRead, true, "pseudo-file system", ""},
		{"/sys/firmware/efi/efivars/x", OpRead, false, "", ""},
		{"/dev/null", OpWrite, true, "pseudo-file system", ""},
		{"/dev/stderr", OpWrite, true, "pseudo-file system", ""},
		{"/dev/fd/1", OpWrite, true, "pseudo-file system", ""},
		{"/dev/fd/7", OpRead, false, "pseudo-file system", ""},
		{"/dev/urandom", OpRead, true, "pseudo-file system", ""},
		{"/dev/sda", OpRead, false, "", ""},
		{"/dev/log", OpConnect, false, "", ""},
		{"/run/dbus/system_bus_socket", OpConnect, false, "", ""},
		{"/root/.ssh/id_ed25519", OpRead, false, "", ""},
	})
	d := tb.Access("/proc/1/root/etc/shadow", OpRead)
	if d.Reason == "" || d.Rule.Target != "/proc/<pid>/root" {
		t.Errorf("%v", d)
	}
}
