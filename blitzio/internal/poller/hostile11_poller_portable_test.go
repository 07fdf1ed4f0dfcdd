package poller

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// The portable poller builds everywhere (it is the fallback on platforms without epoll
// or kqueue), so it is tested here too: Wake and timeouts work, descriptors are refused.

func TestHostile11PortableRefusesDescriptors(t *testing.T) {
	p := NewPortable()
	defer p.Close()
	if p.Name() != "portable" {
		t.Errorf("Name() = %q, want portable", p.Name())
	}
	if err := p.Register(3, 1, Read|Write); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Register = %v, want ErrUnsupported", err)
	}
	if err := p.Deregister(3, 1); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Deregister = %v, want ErrUnsupported", err)
	}
}

// Poll(0) consumes a pending Wake (so that the next waiting Poll waits), a timed Poll
// with nothing pending returns nothing, and Wakes coalesce.
func TestHostile11PortablePollAndWake(t *testing.T) {
	p := NewPortable()
	defer p.Close()
	evs := make([]Event, 2)
	if n, err := p.Poll(evs, 0); n != 0 || err != nil {
		t.Fatalf("Poll(0) = %d, %v", n, err)
	}
	p.Wake()
	p.Wake() // coalesces with the first
	if n, err := p.Poll(evs, 0); n != 0 || err != nil {
		t.Fatalf("Poll(0) after Wake = %d, %v", n, err)
	}
	if pending := len(p.(*portable).wake); pending != 0 {
		t.Fatalf("a Wake still pending after Poll(0) consumed it")
	}
	if n, err := p.Poll(evs, time.Millisecond); n != 0 || err != nil {
		t.Fatalf("Poll(1ms) = %d, %v", n, err)
	}
	// A Wake from another goroutine ends a Poll that waits without limit.
	done := make(chan error, 1)
	go func() {
		_, err := p.Poll(evs, -1)
		done <- err
	}()
	deadline := time.After(10 * time.Second)
	for {
		p.Wake()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		case <-deadline:
			t.Fatal("Poll(-1) not woken by Wake")
		case <-time.After(time.Millisecond):
		}
	}
}

// Close ends a waiting Poll, later Polls return at once, and Close and Wake are safe
// to call concurrently and more than once.
func TestHostile11PortableClose(t *testing.T) {
	p := NewPortable()
	done := make(chan error, 1)
	go func() {
		_, err := p.Poll(make([]Event, 1), -1)
		done <- err
	}()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				p.Wake()
			}
			p.Close()
		}()
	}
	wg.Wait()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Poll(-1) still waiting after Close")
	}
	for _, d := range []time.Duration{-1, 0, time.Hour} {
		res := make(chan error, 1)
		go func() {
			_, err := p.Poll(make([]Event, 1), d)
			res <- err
		}()
		select {
		case err := <-res:
			if err != nil {
				t.Fatalf("Poll(%v) after Close: %v", d, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Poll(%v) after Close waits", d)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
