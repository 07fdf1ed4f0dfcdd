package blitzio

import (
	"math/rand/v2"
	"net"
	"testing"
	"time"
)

// With nothing registered no worker parks in the poller (they park on their channels,
// which a new task wakes without a system call). The first registration must then bring
// a worker into the poller: made from a plain goroutine while every worker sleeps (or
// is just going to sleep: the random pause moves the race), its readiness must still be
// delivered. Before the activation hand-off, such a socket would never be polled.
func TestFirstRegistrationWakesAPoller(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		cfg.Workers = 1 + rand.IntN(2)
		rt, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		for i := range 100 {
			if got := rt.io.live.Load(); got != 0 {
				t.Fatalf("round %d: %d registrations live before it", i, got)
			}
			// Let the workers park (or not quite: a random pause).
			time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
			l, err := ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			// Register the listener from this goroutine: Accept's first poll, on a
			// hand-made Context, with this goroutine as the waker.
			woken := make(chan struct{}, 1)
			cx := NewContext(rt, WakerFunc(func() {
				select {
				case woken <- struct{}{}:
				default:
				}
			}))
			acc := l.Accept()
			if _, ok := acc.Poll(cx); ok {
				t.Fatalf("round %d: accept ready before any connection", i)
			}
			c, err := net.Dial("tcp4", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-woken:
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d (%d workers): the listener's readiness was never delivered: no worker polls the driver after the first registration", i, cfg.Workers)
			}
			r, ok := acc.Poll(cx)
			for !ok { // a spurious wake: wait for the next
				select {
				case <-woken:
				case <-time.After(10 * time.Second):
					t.Fatalf("round %d: accept not ready after its wake", i)
				}
				r, ok = acc.Poll(cx)
			}
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			r.Value.Conn.Close()
			c.Close()
			l.Close()
			waitFor(t, "the sockets deregistered", func() bool { return rt.io.live.Load() == 0 })
		}
	})
}
