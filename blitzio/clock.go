package blitzio

import (
	"sync"
	"time"
)

// Clock is a runtime's time source: the system clock (Config.Clock nil or SystemClock())
// or a *TestClock. It is sealed: only this package's clocks implement it, because the
// runtime must know how each clock moves (the system clock by itself; a TestClock when
// Advance is called).
type Clock interface {
	Now() time.Time
	sealed()
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
func (systemClock) sealed()        {}

// SystemClock returns the real clock (the default).
func SystemClock() Clock { return systemClock{} }

// TestClock is a clock that moves only when told, so timer tests advance time by hand and
// never sleep. Give it to one or more runtimes in Config.Clock. Safe for concurrent use.
type TestClock struct {
	mu  sync.Mutex
	now time.Time
	rts []*Runtime
}

// NewTestClock returns a TestClock reading start.
func NewTestClock(start time.Time) *TestClock { return &TestClock{now: start} }

// Now returns the clock's current time.
func (c *TestClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *TestClock) sealed() {}

// Advance moves the clock forward by d (negative d panics: time does not go back) and,
// before returning, fires every timer of every runtime using the clock that is now due:
// their tasks are woken (scheduled), though they may not have run yet. A timer is due
// exactly when the clock has reached its deadline (to the nanosecond).
//
// If a Waker panics while Advance fires timers, every other due timer is still woken,
// then Advance panics with a *PanicError holding the first such panic and its stack. If
// a Waker calls runtime.Goexit (t.FailNow in a callback), the goroutine calling Advance
// exits, as Goexit demands, but only after every other due timer has been woken.
func (c *TestClock) Advance(d time.Duration) {
	if d < 0 {
		panic("blitzio: TestClock.Advance: negative duration")
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	rts := append([]*Runtime(nil), c.rts...)
	c.mu.Unlock()
	var first *PanicError
	k := 0
	defer func() {
		if k < len(rts) {
			// A waker called runtime.Goexit while rts[k] fired its timers (it woke that
			// runtime's other fired timers itself): this goroutine is ending, and nobody
			// else would fire the timers of the runtimes after it.
			for _, rt := range rts[k+1:] {
				if pe := rt.fireTimers(false); pe != nil {
					reportWakerPanic(pe)
				}
			}
		}
	}()
	for ; k < len(rts); k++ {
		if pe := rts[k].fireTimers(false); pe != nil && first == nil {
			first = pe
		}
	}
	if first != nil {
		panic(first)
	}
}

func (c *TestClock) register(rt *Runtime) {
	c.mu.Lock()
	c.rts = append(c.rts, rt)
	c.mu.Unlock()
}

func (c *TestClock) unregister(rt *Runtime) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, r := range c.rts {
		if r == rt {
			c.rts = append(c.rts[:i], c.rts[i+1:]...)
			return
		}
	}
}
