package blitzio

import (
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// The first Close of a listener is the one that succeeds. Close wakes the accepts that
// wait (it stops the socket listening) before it closes the descriptor, and an acceptor
// that closes the listener on an accept error (as a server's accept loop does) could win
// the race for the descriptor: the owner's own, first Close then failed with "use of
// closed network connection" (found through httpserve's BaseContext listener, about one
// run in 30).
func TestHostile11ListenerFirstCloseWins(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		dir := t.TempDir()
		for i := range 100 {
			var closeL func() error
			var accept func() Future[error]
			var waiting func() bool
			if i%2 == 0 {
				l := listenLoopback(t, "tcp4")
				closeL = l.Close
				accept = func() Future[error] {
					return Map(l.Accept(), func(r Result[Accepted]) error { return r.Err })
				}
				waiting = func() bool { s := l.fd.sio.Load(); return s != nil && s.waiters(dirRead) > 0 }
			} else {
				l, err := ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "s"), Net: "unix"})
				if err != nil {
					t.Fatal(err)
				}
				closeL = l.Close
				accept = func() Future[error] {
					return Map(l.Accept(), func(r Result[*UnixStream]) error { return r.Err })
				}
				waiting = func() bool { s := l.fd.sio.Load(); return s != nil && s.waiters(dirRead) > 0 }
			}
			var acc Future[error]
			h := Spawn(rt, PollFn(func(cx *Context) (error, bool) {
				if acc == nil {
					acc = accept()
				}
				err, ok := acc.Poll(cx)
				if !ok {
					return nil, false
				}
				closeL() // the accept loop's clean-up on an accept error
				return err, true
			}))
			waitFor(t, "the accept to wait", waiting)
			if err := closeL(); err != nil {
				t.Fatalf("round %d: the owner's first Close failed: %v", i, err)
			}
			if err := closeL(); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("round %d: a second Close = %v, want net.ErrClosed", i, err)
			}
			if aerr, err := waitHandle(t, h); err != nil || !errors.Is(aerr, net.ErrClosed) {
				t.Fatalf("round %d: the waiting accept ended with %v, %v; want net.ErrClosed", i, aerr, err)
			}
		}
	})
}
