package supervise

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

const canMeasureTree = true

// treeResident returns the resident memory of root and all its
// descendants, in bytes, from one pass over /proc. Processes in the
// target's nested namespaces (bwrap's pid namespace) are in the host's
// /proc too.
func treeResident(root int) int64 {
	children, rss := scanTree()
	page := int64(unix.Getpagesize())
	var total int64
	for _, pid := range below(root, children) {
		total += rss[pid] * page
	}
	return total + rss[root]*page
}

// killDescendants sends SIGKILL to every process below root, deepest first
// (in one pass over /proc, so a process forked meanwhile can be missed; the
// group kill that follows catches those in root's group).
func killDescendants(root int) {
	children, _ := scanTree()
	d := below(root, children)
	for i := len(d) - 1; i >= 0; i-- {
		_ = unix.Kill(d[i], unix.SIGKILL)
	}
}

// below lists the descendants of root, breadth first.
func below(root int, children map[int][]int) []int {
	var out []int
	seen := map[int]bool{root: true}
	for queue := children[root]; len(queue) > 0; queue = queue[1:] {
		pid := queue[0]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		out = append(out, pid)
		queue = append(queue, children[pid]...)
	}
	return out
}

// scanTree reads every process's parent and resident pages (fields 4 and
// 24 of /proc/<pid>/stat).
func scanTree() (children map[int][]int, rss map[int]int64) {
	children, rss = map[int][]int{}, map[int]int64{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return children, rss
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		ppid, pages, ok := parseStatRSS(stat)
		if !ok {
			continue
		}
		children[ppid] = append(children[ppid], pid)
		rss[pid] = pages
	}
	return children, rss
}

// parseStatRSS returns the parent and the resident pages of a stat line,
// counting fields from the last ')' since comm may hold anything.
func parseStatRSS(stat []byte) (ppid int, pages int64, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(stat[i+1:])
	// f[0] is field 3 (state): ppid is field 4, rss field 24.
	if len(f) < 22 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	rss, err2 := strconv.ParseInt(string(f[21]), 10, 64)
	return ppid, rss, err1 == nil && err2 == nil
}
