package supervise

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Interrupted is the cause (context.Cause) of a context NotifyStop ended:
// warden received Signal and passed it to every running target.
type Interrupted struct{ Signal syscall.Signal }

func (e *Interrupted) Error() string {
	return "interrupted by " + unix.SignalName(e.Signal)
}

// stopSignals are the signals to warden that end a run cleanly.
var stopSignals = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT}

// running holds every Process between Start and the end of its settling.
var running struct {
	sync.Mutex // guards set
	set        map[*Process]struct{}
}

func track(p *Process) {
	running.Lock()
	defer running.Unlock()
	if running.set == nil {
		running.set = map[*Process]struct{}{}
	}
	running.set[p] = struct{}{}
}

func untrack(p *Process) {
	running.Lock()
	defer running.Unlock()
	delete(running.set, p)
}

// stopAll passes sig to every running target (Process.Stop).
func stopAll(sig syscall.Signal) {
	running.Lock()
	defer running.Unlock()
	for p := range running.set {
		p.Stop(sig)
	}
}

// NotifyStop catches SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to warden (a
// terminal's Ctrl-C and Ctrl-\ included) for as long as the returned stop
// function is not called. Each caught signal is passed at once to every
// running target's process group (Process.Stop: the signal, then SIGKILL
// after the grace period), and the first one cancels the returned context
// with an *Interrupted cause, so the run ends cleanly and records status
// "failed":
//
//	ctx, stop := supervise.NotifyStop(ctx)
//	defer stop()
//	res, err := supervise.Run(ctx, spec)
//	var intr *supervise.Interrupted
//	if errors.As(context.Cause(ctx), &intr) { ... }
//
// Pass the returned context to Start, so that a target starting while the
// signal arrives is stopped with the same signal. Ctrl-Z (SIGTSTP) is left
// alone: it suspends warden while the target, in its own process group, runs
// on, bounded by its timeout (the watchdog's backstop enforces it even while
// warden is suspended).
func NotifyStop(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, len(stopSignals))
	signal.Notify(ch, stopSignals...)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case s := <-ch:
				sig := s.(syscall.Signal)
				stopAll(sig)
				cancel(&Interrupted{Signal: sig})
			case <-quit:
				return
			}
		}
	})
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(ch)
			close(quit)
			wg.Wait()
			cancel(context.Canceled)
		})
	}
}

// causeSignal returns the signal that ended ctx through NotifyStop, or
// SIGTERM for any other end.
func causeSignal(ctx context.Context) syscall.Signal {
	var intr *Interrupted
	if errors.As(context.Cause(ctx), &intr) {
		return intr.Signal
	}
	return unix.SIGTERM
}
