package bwrapplan

import (
	"strconv"
	"strings"
)

// parseVersion reads "X.Y" or "X.Y.Z".
func parseVersion(v string) ([3]int, bool) {
	var n [3]int
	parts := strings.Split(v, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return n, false
	}
	for i, s := range parts {
		x, err := strconv.Atoi(s)
		if err != nil || x < 0 {
			return n, false
		}
		n[i] = x
	}
	return n, true
}

func cmpVersion(a, b [3]int) int {
	for i := range a {
		if a[i] != b[i] {
			return a[i] - b[i]
		}
	}
	return 0
}
