//go:build unix

package blitzio

import (
	"errors"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Many listeners of one signal on many tasks (far more than the 2 workers), half of
// them closed at random moments (some twice, some listening to the signal twice) while
// signals keep arriving: each survivor hears at least one signal, each closed one ends
// with ErrListenerClosed, and a listener made after all the others closed still hears
// the signal (the default action, which would kill the test, never comes back while
// one listens).
func TestHostile3ManySignalListenersSomeClosed(t *testing.T) {
	rt := fileRT(t)
	guard, err := ListenSignals(SignalUser2) // keeps SIGUSR2 caught for the whole test
	if err != nil {
		t.Fatal(err)
	}
	defer guard.Close()
	const n = 64
	ls := make([]*SignalListener, n)
	hs := make([]JoinHandle[Result[os.Signal]], n)
	for i := range ls {
		kinds := []SignalKind{SignalUser2}
		if i%5 == 0 {
			kinds = append(kinds, SignalUser2, SignalWindowChange)
		}
		if ls[i], err = ListenSignals(kinds...); err != nil {
			t.Fatal(err)
		}
		l := ls[i]
		hs[i] = Spawn(rt, Async(func(co *Co) Result[os.Signal] {
			if rand.IntN(2) == 0 {
				Await(co, YieldNow())
			}
			return Await(co, l.Recv())
		}))
	}
	var closers atomic.Int32
	for i := 0; i < n; i += 2 {
		l := ls[i]
		closers.Add(1)
		go func() {
			defer closers.Add(-1)
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
			l.Close()
			if rand.IntN(2) == 0 {
				l.Close()
			}
		}()
	}
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for {
			select {
			case <-stop:
				return
			default:
			}
			syscall.Kill(os.Getpid(), syscall.SIGUSR2)
			time.Sleep(200 * time.Microsecond)
		}
	}()
	for i, h := range hs {
		var r Result[os.Signal]
		hostile3Watch(t, 10*time.Second, "listener "+itoa(i)+" never finished", func() { r, _ = h.Wait() })
		switch {
		case r.Err == nil && r.Value == syscall.SIGUSR2:
		case r.Err != nil && i%2 == 0 && errors.Is(r.Err, ErrListenerClosed):
		default:
			t.Errorf("listener %d: %v %v", i, r.Value, r.Err)
		}
	}
	close(stop)
	<-sent
	for i := 1; i < n; i += 2 {
		ls[i].Close()
	}
	for closers.Load() != 0 {
		time.Sleep(time.Millisecond)
	}
	for i := range ls {
		// A signal that arrived before Close may still be reported once (as a closed
		// channel drains); then Recv says closed, and keeps saying it.
		r := run(t, rt, ls[i].Recv())
		if r.Err == nil {
			r = run(t, rt, ls[i].Recv())
		}
		if !errors.Is(r.Err, ErrListenerClosed) {
			t.Errorf("Recv after Close of listener %d = %v %v", i, r.Value, r.Err)
		}
		if r := run(t, rt, ls[i].Recv()); !errors.Is(r.Err, ErrListenerClosed) {
			t.Errorf("second Recv after Close of listener %d = %v %v", i, r.Value, r.Err)
		}
	}
	late, err := ListenSignals(SignalUser2)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	guard.Close()
	syscall.Kill(os.Getpid(), syscall.SIGUSR2)
	if r := awaitSignal(t, rt, late); r.Err != nil || r.Value != syscall.SIGUSR2 {
		t.Fatalf("late listener: %v %v", r.Value, r.Err)
	}
}
