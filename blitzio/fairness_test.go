package blitzio

import (
	"sync/atomic"
	"testing"
)

// pingPongPair is two tasks that wake each other through the LIFO slot until stop is set.
type pingPongPair struct {
	stop  *atomic.Bool
	peer  atomic.Pointer[Waker]
	other *pingPongPair
	turns *atomic.Int64
}

func (p *pingPongPair) Poll(cx *Context) (int, bool) {
	if p.stop.Load() {
		if w := p.other.peer.Load(); w != nil {
			w.Wake() // let the other one see stop too
		}
		return 0, true
	}
	w := cx.Waker()
	p.peer.Store(&w)
	p.turns.Add(1)
	if o := p.other.peer.Load(); o != nil {
		o.WakeFrom(cx) // to this worker's LIFO slot
	}
	return 0, false
}

// TestLIFOCapDoesNotStarveQueue: on one worker, two tasks that keep waking each other
// through the LIFO slot must not starve a task waiting in the run queue (at most 3 LIFO
// polls in a row, then the LIFO task goes to the back).
func TestLIFOCapDoesNotStarveQueue(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var stop atomic.Bool
	var turns atomic.Int64
	a := &pingPongPair{stop: &stop, turns: &turns}
	b := &pingPongPair{stop: &stop, turns: &turns}
	a.other, b.other = b, a
	release := gate(rt)
	ha := Spawn(rt, a)
	hb := Spawn(rt, b)
	release()
	waitFor(t, "ping-pong running", func() bool { return turns.Load() > 100 })
	hc := Spawn(rt, Lazy(func() int { stop.Store(true); return 1 }))
	waitHandle(t, hc)
	waitHandle(t, ha)
	waitHandle(t, hb)
}

// selfRespawner keeps its worker's local queue busy: each poll spawns a copy of itself
// locally, until stop is set.
type selfRespawner struct {
	stop  *atomic.Bool
	polls *atomic.Int64
}

func (s selfRespawner) Poll(cx *Context) (int, bool) {
	s.polls.Add(1)
	if !s.stop.Load() {
		Spawn(cx, s).Detach()
	}
	return 0, true
}

// TestInjectedTaskNotStarved: a worker whose local queue never empties still checks the
// injection queue (every globalInterval ticks), so a task spawned from outside runs.
func TestInjectedTaskNotStarved(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	var stop atomic.Bool
	var polls atomic.Int64
	for i := 0; i < 8; i++ {
		Spawn(rt, selfRespawner{&stop, &polls}).Detach()
	}
	// Only once the worker is busy with its local queue is the outside task injected.
	waitFor(t, "respawners running", func() bool { return polls.Load() > 1000 })
	h := Spawn(rt, Lazy(func() int { stop.Store(true); return 7 }))
	if v, err := waitHandle(t, h); v != 7 || err != nil {
		t.Fatalf("injected task: %v %v", v, err)
	}
}
