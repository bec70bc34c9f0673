package supervise

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// processGone reports whether pid has exited (a zombie counts as gone).
func processGone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	state, _, ok := parseStat(stat)
	return !ok || state == 'Z' || state == 'X'
}

// childrenOf lists the children of pid, zombies included: an unreaped child
// is a leak too.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			kids = append(kids, child)
		}
	}
	return kids
}

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		stat  string
		state byte
		pgrp  int
		ok    bool
	}{
		{"42 (sleep) S 1 42 42 0", 'S', 42, true},
		{"42 (a b) c) (d) Z 1 7 7 0", 'Z', 7, true},
		{"42 (x) R", 0, 0, false},
		{"garbage", 0, 0, false},
	} {
		state, pgrp, ok := parseStat([]byte(tc.stat))
		if state != tc.state || pgrp != tc.pgrp || ok != tc.ok {
			t.Errorf("parseStat(%q) = %q %d %v", tc.stat, state, pgrp, ok)
		}
	}
}
