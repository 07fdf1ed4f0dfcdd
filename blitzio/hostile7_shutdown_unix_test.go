//go:build unix

package blitzio

import (
	"context"
	"testing"
)

// TriggerOn once Wait has run the hooks would catch the signals for good (the end of
// the run is what stops catching them), so a second SIGTERM could never end the
// process: it fails instead.
func TestHostile7ShutdownTriggerOnAfterWait(t *testing.T) {
	s := NewShutdown()
	s.Trigger()
	if err, _ := hostile7Wait(t, s, hostile7Ctx(t)); err != nil {
		t.Fatal(err)
	}
	err := s.TriggerOn(SignalUser2)
	s.mu.Lock()
	l := s.listener
	s.mu.Unlock()
	if l != nil {
		l.Close()
	}
	if err == nil {
		t.Fatal("TriggerOn after Wait ran the hooks succeeded: its signals would be caught forever")
	}

	// Before the run, TriggerOn works, and the run stops catching the signals.
	s = NewShutdown()
	if err := s.TriggerOn(SignalUser2); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	l = s.listener
	s.mu.Unlock()
	s.Trigger()
	if err, _ := hostile7Wait(t, s, context.Background()); err != nil {
		t.Fatal(err)
	}
	if r, ok := l.Recv().Poll(NewContext(nil, WakerFunc(func() {}))); !ok || r.Err == nil {
		t.Fatal("the listener of TriggerOn is still open after Wait ran the hooks")
	}
}
