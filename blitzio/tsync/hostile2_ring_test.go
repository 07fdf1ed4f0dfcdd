package tsync

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type bigVal [32 << 10]byte

// TestHostile2RingUnpublishedSlotLosesWake probes the bounded channel's "the ring never
// spins" design. A receiver woken for a value in slot k+1 can find slot k (the head)
// claimed by a slower sender that has not published yet: pop reads it as empty, and
// the receiver re-registers, consuming the wake. The slower sender then publishes and
// wakes one receiver, which takes slot k. Two values, two wakes, but one wake was spent
// on a receiver that got nothing: the value in slot k+1 sits in the buffer while a
// receiver sleeps.
//
// Each round parks K one-shot receivers (goroutines in Recv), then K goroutines send one
// value each at once. Every receiver must get a value.
func TestHostile2RingUnpublishedSlotLosesWake(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	const K = 16
	rounds := 3000
	if testing.Short() {
		rounds = 50
	}
	deadline := time.Now().Add(1500 * time.Millisecond)
	for round := 0; round < rounds && time.Now().Before(deadline); round++ {
		tx, rx := NewChannel[bigVal](K)
		var got atomic.Int64
		var wg sync.WaitGroup
		for i := 0; i < K; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := rx.Recv(); err == nil {
					got.Add(1)
				}
			}()
		}
		// Let the receivers park.
		for w := time.Now().Add(5 * time.Second); rx.c.recvQ.state.Load()>>1 != K; {
			if time.Now().After(w) {
				t.Fatalf("round %d: receivers did not park", round)
			}
			runtime.Gosched()
		}
		start := make(chan struct{})
		var sw sync.WaitGroup
		for i := 0; i < K; i++ {
			sw.Add(1)
			go func() {
				defer sw.Done()
				var v bigVal
				v[0] = byte(i)
				<-start
				if err := tx.TrySend(v); err != nil {
					t.Errorf("TrySend: %v", err)
				}
			}()
		}
		close(start)
		sw.Wait()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: %d of %d one-shot receivers got a value; %d values sit in the buffer and "+
				"%d receivers sleep (lost wake-up)", round, got.Load(), K, rx.Len(), rx.c.recvQ.state.Load()>>1)
		}
		tx.Close()
		rx.Close()
	}
}

// TestHostile2RingUnfreedSlotLosesSendWake is the mirror image on the sending side: a
// sender woken for the slot a receive freed can find the tail slot still claimed by a
// slower receiver that has not freed it yet; push reads it as full, the sender queues
// again with its wake spent, and a free slot is left with senders asleep.
//
// Each round fills a channel of capacity K, parks K one-shot senders (goroutines in
// Send), then K goroutines receive one value each at once. Every sender must finish.
func TestHostile2RingUnfreedSlotLosesSendWake(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	const K = 16
	rounds := 3000
	if testing.Short() {
		rounds = 50
	}
	deadline := time.Now().Add(1500 * time.Millisecond)
	for round := 0; round < rounds && time.Now().Before(deadline); round++ {
		tx, rx := NewChannel[bigVal](K)
		for i := 0; i < K; i++ {
			if err := tx.TrySend(bigVal{}); err != nil {
				t.Fatal(err)
			}
		}
		var sent atomic.Int64
		var wg sync.WaitGroup
		for i := 0; i < K; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := tx.Send(bigVal{}); err == nil {
					sent.Add(1)
				}
			}()
		}
		for w := time.Now().Add(5 * time.Second); tx.c.sendQ.state.Load()>>1 != K; {
			if time.Now().After(w) {
				t.Fatalf("round %d: senders did not park", round)
			}
			runtime.Gosched()
		}
		start := make(chan struct{})
		var rw sync.WaitGroup
		for i := 0; i < K; i++ {
			rw.Add(1)
			go func() {
				defer rw.Done()
				<-start
				if _, err := rx.TryRecv(); err != nil {
					t.Errorf("TryRecv: %v", err)
				}
			}()
		}
		close(start)
		rw.Wait()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: %d of %d one-shot senders finished; the channel has %d free slots and "+
				"%d senders sleep (lost wake-up)", round, sent.Load(), K, K-rx.Len(), tx.c.sendQ.state.Load()>>1)
		}
		rx.Close()
		tx.Close()
	}
}
