package pluginhost

import (
	"runtime"
	"sync"
)

// Pdeathsig fires when the thread that forked the child ends, not the
// process (golang/go#27505), and Go ends a thread when a goroutine exits
// while locked to it — which supervision does for each target. A plugin
// forked from such a thread would be killed mid-run. So plugins are forked
// only from spawn threads: goroutines locked to their threads for the life
// of the process, which therefore never end.
const spawnThreads = 8

var (
	spawnOnce sync.Once
	spawnq    chan func()
)

// onSpawnThread runs f on one of the spawn threads and waits for it.
func onSpawnThread(f func()) {
	spawnOnce.Do(func() {
		spawnq = make(chan func())
		for range spawnThreads {
			go func() {
				runtime.LockOSThread() // never unlocked: the thread must outlive every child
				for f := range spawnq {
					f()
				}
			}()
		}
	})
	done := make(chan struct{})
	spawnq <- func() {
		defer close(done)
		f()
	}
	<-done
}
