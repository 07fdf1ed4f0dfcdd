package blitzio

import (
	"sync/atomic"
	"testing"
)

// spawningPingPong is one of two tasks that wake each other through the LIFO slot (as a
// request/reply pair does) and, every spawnEvery turns, spawns a child on its own worker.
type spawningPingPong struct {
	pingPongPair
	spawnEvery int64
	children   *atomic.Int64
	done       *atomic.Int64
}

func (p *spawningPingPong) Poll(cx *Context) (int, bool) {
	if !p.stop.Load() && p.turns.Load()%p.spawnEvery == 0 {
		p.children.Add(1)
		done := p.done
		Spawn(cx, Lazy(func() int { done.Add(1); return 0 })).Detach()
	}
	return p.pingPongPair.Poll(cx)
}

// TestLIFOCapRequeueKeepsQueueRunning: when the LIFO cap sends a task back to an empty
// local queue, the worker does not wake a parked one (it runs the task itself next). With
// two workers, a pair waking each other through the LIFO slot must still let every task
// queued beside it run: the children it spawns locally, and tasks injected from outside.
func TestLIFOCapRequeueKeepsQueueRunning(t *testing.T) {
	for _, workers := range []int{1, 2} {
		rt := newRT(t, Config{Workers: workers})
		var stop atomic.Bool
		var turns, children, done atomic.Int64
		a := &spawningPingPong{pingPongPair: pingPongPair{stop: &stop, turns: &turns}, spawnEvery: 97, children: &children, done: &done}
		b := &spawningPingPong{pingPongPair: pingPongPair{stop: &stop, turns: &turns}, spawnEvery: 89, children: &children, done: &done}
		a.other, b.other = &b.pingPongPair, &a.pingPongPair
		ha := Spawn(rt, a)
		hb := Spawn(rt, b)
		waitFor(t, "ping-pong running", func() bool { return turns.Load() > 5000 })
		var injected []JoinHandle[int]
		for i := range 64 {
			injected = append(injected, Spawn(rt, Lazy(func() int { return i })))
		}
		for i, h := range injected {
			if v, err := waitHandle(t, h); v != i || err != nil {
				t.Fatalf("workers=%d: injected task %d: %v, %v", workers, i, v, err)
			}
		}
		waitFor(t, "children spawned beside the pair to run", func() bool {
			return children.Load() > 20 && done.Load() >= children.Load()-2
		})
		stop.Store(true)
		// Each side wakes the other once it sees stop (pingPongPair.Poll).
		if w := a.peer.Load(); w != nil {
			w.Wake()
		}
		waitHandle(t, ha)
		waitHandle(t, hb)
		waitFor(t, "every child to run", func() bool { return done.Load() == children.Load() })
	}
}
