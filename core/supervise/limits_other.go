//go:build !linux

package supervise

// canMeasureTree is false: without /proc a process tree's memory cannot be
// summed, so a Spec with a MemoryLimit is refused rather than unenforced.
const canMeasureTree = false

func treeResident(int) int64 { return 0 }

func killDescendants(int) {}
