package tsync

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// waitSetCount returns the count a waitSet publishes and the length of its list, read
// under its lock.
func waitSetCount(s *waitSet) (published, linked int) {
	st := s.lock()
	for w := s.l.head; w != nil; w = w.next {
		linked++
	}
	s.unlock(st)
	return int(st / wsOne), linked
}

// TestWaitSetReRegisterAfterPop checks the registration generations: a node that was
// popped (notified) and then registered again is queued again, and a deregister of the
// new registration must unlink it rather than trust the mark the earlier pop left. If
// the mark were not tied to the registration, the node would stay linked after it left
// and a later notification would go to a waiter that is gone (a lost wake-up).
func TestWaitSetReRegisterAfterPop(t *testing.T) {
	var s waitSet
	var a, b waitNode
	var wa, wb wakeCount

	a.register(&s, wa.cx())
	s.notifyOne(nil) // pops a
	if wa.n.Load() != 1 {
		t.Fatalf("a woken %d times, want 1", wa.n.Load())
	}
	a.register(&s, wa.cx()) // a found nothing: registers again
	b.register(&s, wb.cx())
	if pub, linked := waitSetCount(&s); pub != 2 || linked != 2 {
		t.Fatalf("after re-registering: count %d, linked %d; want 2, 2", pub, linked)
	}
	// a leaves (dropped) without having been notified in this registration: it must be
	// unlinked, and it has nothing to pass on.
	if s.deregister(&a) {
		t.Fatal("deregister reports a notification a received in an earlier registration")
	}
	a.registered = false
	if pub, linked := waitSetCount(&s); pub != 1 || linked != 1 {
		t.Fatalf("after a left: count %d, linked %d; want 1, 1", pub, linked)
	}
	s.notifyOne(nil)
	if wb.n.Load() != 1 || wa.n.Load() != 1 {
		t.Fatalf("the notification went to a waiter that left: a woken %d, b %d; want 1, 1", wa.n.Load(), wb.n.Load())
	}
	// b was popped in its registration: deregister sees it without the lock.
	if !s.deregister(&b) {
		t.Fatal("deregister of a popped node reports no notification")
	}
	if pub, linked := waitSetCount(&s); pub != 0 || linked != 0 {
		t.Fatalf("at the end: count %d, linked %d; want 0, 0", pub, linked)
	}
}

// TestWaitSetLockStress hammers one waitSet from more goroutines than cores: each
// registers, sometimes leaves, and notifies, with random pauses. The lock must keep the
// list and the published count equal, and every waiter still queued at the end must be
// reachable by notifications (none lost, none woken twice per registration).
func TestWaitSetLockStress(t *testing.T) {
	defer chanWatchdog(t, 30*time.Second)()
	const goroutines = 16
	rounds := 3000
	if testing.Short() || raceEnabled {
		rounds = 500
	}
	var s waitSet
	var wg sync.WaitGroup
	// Every wake comes from a notifyOne or from a leave passing one on.
	var woken, wakeCalls atomic.Int64
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			var n waitNode
			cx := blitzio.NewContext(nil, blitzio.WakerFunc(func() { woken.Add(1) }))
			for range rounds {
				n.register(&s, cx)
				if rng.IntN(4) == 0 {
					runtime.Gosched()
				}
				switch rng.IntN(3) {
				case 0:
					wakeCalls.Add(1)
					n.leave(&s, nil) // passes on a notification it got
				case 1:
					n.quiet(&s)
				default:
					wakeCalls.Add(2)
					s.notifyOne(nil)
					n.leave(&s, nil)
				}
			}
		}()
	}
	wg.Wait()
	if pub, linked := waitSetCount(&s); pub != 0 || linked != 0 {
		t.Fatalf("every node left, yet count %d, linked %d", pub, linked)
	}
	if woken.Load() > wakeCalls.Load() {
		t.Fatalf("%d wakes from %d calls that wake at most one each", woken.Load(), wakeCalls.Load())
	}
}
