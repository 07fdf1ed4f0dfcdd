package tsync

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// chanWatchdog fails the whole test binary with a goroutine dump if the test has not
// finished within d: a lost wake-up shows as a clear failure, not a hang until go
// test's global timeout. Call the returned function when the test is done.
func chanWatchdog(t testing.TB, d time.Duration) func() {
	t.Helper()
	name := t.Name()
	tm := time.AfterFunc(d, func() {
		buf := make([]byte, 8<<20)
		n := runtime.Stack(buf, true)
		fmt.Fprintf(os.Stderr, "WATCHDOG: %s did not finish within %v (lost wake-up?)\n%s\n", name, d, buf[:n])
		panic("watchdog: " + name + " hung")
	})
	return func() { tm.Stop() }
}

// chanRT starts a runtime with the given number of workers, closed at the end of the test.
func chanRT(t testing.TB, workers int) *blitzio.Runtime {
	t.Helper()
	rt, err := blitzio.New(blitzio.Config{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// wakeCount is a Waker that counts its wakes, for polling futures by hand.
type wakeCount struct{ n atomic.Int64 }

func (w *wakeCount) cx() *blitzio.Context {
	return blitzio.NewContext(nil, blitzio.WakerFunc(func() { w.n.Add(1) }))
}

// recvLoop is a task that receives from rx until it is closed, adding every value to
// sum and counting it, and marking each value in seen (to prove exactly-once delivery).
type recvLoop struct {
	f    *RecvFuture[int]
	sum  *atomic.Int64
	cnt  *atomic.Int64
	seen []atomic.Int32
}

func (l *recvLoop) Poll(cx *blitzio.Context) (struct{}, bool) {
	for {
		r, ok := l.f.Poll(cx)
		if !ok {
			return struct{}{}, false
		}
		if r.Err != nil {
			return struct{}{}, true
		}
		l.sum.Add(int64(r.Value))
		l.cnt.Add(1)
		if l.seen != nil {
			l.seen[r.Value].Add(1)
		}
	}
}

func (l *recvLoop) Drop() { l.f.Drop() }

// sendLoop is a task that sends the values from..to-1 then closes its sender.
type sendLoop struct {
	s        *Sender[int]
	f        *SendFuture[int]
	next, to int
	yieldMod int // yield every yieldMod sends (0: never), for randomized interleaving
}

func (l *sendLoop) Poll(cx *blitzio.Context) (struct{}, bool) {
	for {
		if l.f != nil {
			err, ok := l.f.Poll(cx)
			if !ok {
				return struct{}{}, false
			}
			if err != nil {
				panic(fmt.Sprintf("send %d failed: %v", l.next, err))
			}
			l.next++
			if l.yieldMod > 0 && l.next%l.yieldMod == 0 && l.next < l.to {
				l.f.Reset(l.next)
				cx.Yield()
				return struct{}{}, false
			}
		}
		if l.next >= l.to {
			l.s.Close()
			return struct{}{}, true
		}
		if l.f == nil {
			l.f = l.s.SendAsync(l.next)
		} else {
			l.f.Reset(l.next)
		}
	}
}
