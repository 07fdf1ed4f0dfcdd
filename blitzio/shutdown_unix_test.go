//go:build unix

package blitzio

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestShutdownOnSignalSurvivesASecondSignal triggers a shutdown with SIGUSR1 (whose
// default action ends the process) and sends it again while work is still draining: the
// process must live on until Wait returns.
func TestShutdownOnSignalSurvivesASecondSignal(t *testing.T) {
	s := NewShutdown()
	if err := s.TriggerOn(SignalUser1); err != nil {
		t.Fatal(err)
	}
	if err := s.TriggerOn(SignalUser1); err == nil {
		t.Fatal("TriggerOn twice succeeded")
	}
	g, err := s.Guard()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !s.Triggered() {
		if time.Now().After(deadline) {
			t.Fatal("watchdog: SIGUSR1 did not trigger the shutdown")
		}
		time.Sleep(time.Millisecond)
	}
	waited := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		waited <- s.Wait(ctx)
	}()
	// A signal arriving during the shutdown: still caught.
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	g.Release()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watchdog: Wait did not return after the last guard was released")
	}
}
