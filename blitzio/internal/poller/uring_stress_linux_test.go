//go:build linux

package poller

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestUringStressRandomOps: 32 goroutines (many more than cores) submit random Sends,
// Recvs, Cancels, Registers/Deregisters, Wakes and Flushes on their own socketpairs
// while one goroutine polls with a small event buffer on a ring of 4 entries. Every
// Send and Recv must end with exactly one final event (More unset), every received
// buffer is released, and at the end only the wake poll is in flight.
func TestUringStressRandomOps(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 4, Buffers: 8, BufferSize: 64})
	requireFeature(t, r, ProvidedBuffers, "provided-buffer rings")
	const workers = 32
	ops := 150
	if testing.Short() {
		ops = 40
	}

	var mu sync.Mutex
	final := map[uint64]int{} // token -> final events seen
	submitted := map[uint64]bool{}

	stop := make(chan struct{})
	pollErr := make(chan error, 1)
	go func() {
		evs := make([]Event, 3)
		for {
			select {
			case <-stop:
				pollErr <- nil
				return
			default:
			}
			n, err := r.Poll(evs, time.Duration(rand.IntN(3))*time.Millisecond)
			if err != nil {
				pollErr <- err
				return
			}
			mu.Lock()
			for _, ev := range evs[:n] {
				if ev.Buf >= 0 {
					r.Release(ev.Buf)
				}
				if ev.Op != OpReady && !ev.More {
					final[ev.Token]++
				}
			}
			mu.Unlock()
		}
	}()

	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			a, b := socketpair(t)
			c, d := socketpair(t)
			defer unix.Close(a)
			defer unix.Close(b)
			defer unix.Close(c)
			defer unix.Close(d)
			registered := false
			var pending []uint64
			next := uint64(w) << 40
			submit := func(f func(tok uint64) error) {
				tok := next
				next++
				mu.Lock()
				submitted[tok] = true
				mu.Unlock()
				if err := f(tok); err != nil {
					t.Error(err)
				}
				pending = append(pending, tok)
			}
			for range ops {
				switch rng.IntN(9) {
				case 0, 1:
					n := 1 + rng.IntN(100)
					submit(func(tok uint64) error { return r.Send(a, tok, make([]byte, n)) })
				case 2, 3:
					submit(func(tok uint64) error { return r.Recv(b, tok) })
				case 4:
					if len(pending) > 0 {
						r.Cancel(pending[rng.IntN(len(pending))])
					}
				case 5:
					if registered {
						if err := r.Deregister(c, uint64(w)); err != nil {
							t.Error(err)
						}
					} else if err := r.Register(c, uint64(w), Read|Write); err != nil {
						t.Error(err)
					}
					registered = !registered
					unix.Write(d, []byte{1})
				case 6:
					r.Wake()
				case 7:
					r.Flush()
				case 8:
					runtime.Gosched()
					time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
				}
			}
			if registered {
				r.Deregister(c, uint64(w))
			}
			// Drain what was sent so that no send stays blocked, then cancel the
			// receives still waiting.
			unix.SetNonblock(a, true)
			for _, tok := range pending {
				r.Cancel(tok)
			}
			r.Flush()
			// Keep the sockets open until every operation on them has ended.
			deadline := time.Now().Add(60 * time.Second)
			for {
				mu.Lock()
				left := 0
				for _, tok := range pending {
					if final[tok] == 0 {
						left++
					}
				}
				mu.Unlock()
				if left == 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Errorf("worker %d: %d operations never ended", w, left)
					return
				}
				unix.Write(a, make([]byte, 8)) // wake receives that were not cancelled yet
				r.Cancel(pending[len(pending)-1])
				for _, tok := range pending {
					r.Cancel(tok)
				}
				r.Flush()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(stop)
	r.Wake()
	if err := <-pollErr; err != nil {
		t.Fatal(err)
	}
	for tok, n := range final {
		if n != 1 {
			t.Errorf("token %#x: %d final events", tok, n)
		}
		if !submitted[tok] {
			t.Errorf("final event for token %#x never submitted", tok)
		}
	}
	for tok := range submitted {
		if final[tok] != 1 {
			t.Errorf("token %#x: %d final events, want 1", tok, final[tok])
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, ev := range drainEvents(t, r) {
			if ev.Buf >= 0 {
				r.Release(ev.Buf)
			}
		}
		r.mu.Lock()
		left := r.inflight
		r.mu.Unlock()
		if left == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d operations in flight, want only the wake poll", left)
		}
	}
	r.bufs.mu.Lock()
	defer r.bufs.mu.Unlock()
	for id, h := range r.bufs.held {
		if h {
			t.Errorf("buffer %d never given back", id)
		}
	}
}
