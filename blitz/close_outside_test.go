package blitz

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Close must not be held off by goroutines that keep calling: from the moment Close
// begins, calls from outside the pool's work are refused with ErrClosed, while the work
// Close waits for may still make nested calls. (Admitting every call during Close let
// 16 looping callers keep a pool from ever closing.)
func TestCloseRefusesOutsideCallersWhileDraining(t *testing.T) {
	for round := 0; round < 5; round++ {
		p, _ := NewPool(Config{Workers: 1 + round%3})
		release := make(chan struct{})
		started := make(chan struct{})
		nestedErr := make(chan error, 1)
		// One job Close must wait for; once released it makes a nested call.
		p.Go(func(*Task) {
			close(started)
			<-release
			nestedErr <- p.TryCall(func(*Task) error { return nil })
		})
		<-started
		// Callers that never stop calling until refused.
		var wg sync.WaitGroup
		var refused atomic.Int32
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					err := p.TryCall(func(t *Task) error { Join(t, func(*Task) {}, func(*Task) {}); return nil })
					if errors.Is(err, ErrClosed) {
						refused.Add(1)
						return
					}
					if err != nil {
						t.Errorf("TryCall: %v", err)
						return
					}
				}
			}()
		}
		closed := make(chan struct{})
		go func() { p.Close(); close(closed) }()
		// Every looping caller is refused while the Go job still holds Close off.
		within(t, 20*time.Second, "outside callers refused once Close began", wg.Wait)
		if refused.Load() != 8 {
			t.Fatalf("round %d: %d of 8 callers saw ErrClosed", round, refused.Load())
		}
		select {
		case <-closed:
			t.Fatalf("round %d: Close returned while a Go job was still running", round)
		default:
		}
		close(release)
		if err := <-nestedErr; err != nil {
			t.Fatalf("round %d: nested call from the work Close waits for: %v", round, err)
		}
		within(t, 20*time.Second, "Close returns once the work is done", func() { <-closed })
	}
}
