//go:build linux

package poller

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// coopModes runs body on a ring set up with IORING_SETUP_COOP_TASKRUN (the default
// where the kernel has it) and on one without (kernels before 5.19).
func coopModes(t *testing.T, body func(t *testing.T, r *ioUring)) {
	for _, coop := range []bool{true, false} {
		name := "coop"
		if !coop {
			name = "signal"
		}
		t.Run(name, func(t *testing.T) {
			uringTestNoCoopTaskrun = !coop
			r := newTestUring(t, IOUringConfig{Entries: 8})
			uringTestNoCoopTaskrun = false
			if !coop && r.flags&uringSetupCoopTask != 0 {
				t.Fatal("ring set up with COOP_TASKRUN although the test hook refused it")
			}
			if coop && r.flags&uringSetupCoopTask == 0 {
				t.Skip("this kernel refused IORING_SETUP_COOP_TASKRUN (before 5.19)")
			}
			body(t, r)
		})
	}
}

// The readiness of a poll armed by a thread that then stays busy in user code (no
// system call) still reaches a Poll on another thread. The kernel posts a poll's
// completion from task work run by the thread that submitted it; with COOP_TASKRUN it
// does not interrupt that thread for it, and the work runs when the thread next leaves
// the kernel (here: a timer interrupt or Go's preemption signal), so the event is late
// but never lost.
func TestUringReadinessWhileSubmitterSpins(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	coopModes(t, func(t *testing.T, r *ioUring) {
		a, b := socketpairCleanup(t)
		const tok = 0x5917
		registered := make(chan error)
		var stop atomic.Bool
		spun := make(chan struct{})
		go func() {
			runtime.LockOSThread() // the Register and its submission come from this thread
			defer runtime.UnlockOSThread()
			err := r.Register(a, tok, Read)
			if err == nil {
				err = r.Flush()
			}
			registered <- err
			for !stop.Load() {
				// Busy in user code: no system call that would run the task work.
			}
			close(spun)
		}()
		if err := <-registered; err != nil {
			stop.Store(true)
			t.Fatal(err)
		}
		defer func() { stop.Store(true); <-spun }()
		drainEvents(t, r)
		for i := range 5 {
			if _, err := unix.Write(b, []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
			pollUntil(t, r, "Readable while the submitter spins", func(ev Event) bool {
				return ev.Token == tok && ev.Ready&Readable != 0
			})
			var buf [8]byte
			unix.Read(a, buf[:])
		}
	})
}

// The readiness of a poll armed by a thread that is then asleep (a goroutine locked to
// it and blocked, so the thread waits in a futex) reaches a Poll on another thread: the
// kernel wakes a sleeping submitter to run the task work with or without
// COOP_TASKRUN.
func TestUringReadinessWhileSubmitterSleeps(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	coopModes(t, func(t *testing.T, r *ioUring) {
		a, b := socketpairCleanup(t)
		const tok = 0x51EE9
		registered := make(chan error)
		release := make(chan struct{})
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			err := r.Register(a, tok, Read)
			if err == nil {
				err = r.Flush()
			}
			registered <- err
			<-release // the thread sleeps until the test ends
			close(done)
		}()
		if err := <-registered; err != nil {
			close(release)
			t.Fatal(err)
		}
		defer func() { close(release); <-done }()
		drainEvents(t, r)
		for i := range 5 {
			if _, err := unix.Write(b, []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
			pollUntil(t, r, "Readable while the submitter sleeps", func(ev Event) bool {
				return ev.Token == tok && ev.Ready&Readable != 0
			})
			var buf [8]byte
			unix.Read(a, buf[:])
		}
	})
}
