//go:build linux || darwin || freebsd

// Package acceptloop is the accept loop of the example servers: accept connections
// until the server stops, riding out accept errors as net/http's Server.Serve does.
package acceptloop

import (
	"errors"
	"log"
	"net"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// The back-off after a failed accept: 5 ms, doubling up to 1 s (net/http's Server.Serve
// uses the same), reset by a successful accept.
const (
	MinDelay = 5 * time.Millisecond
	MaxDelay = time.Second
)

// Listener is what Run accepts connections from; *blitzio.TCPListener is one. Tests
// give Run a Listener that fails when they say so.
type Listener interface {
	Accept() blitzio.Future[blitzio.Result[blitzio.Accepted]]
}

// Config is what Run needs besides the listener.
type Config struct {
	// Stop returns a future that is ready once the server must stop accepting
	// (blitzio.Shutdown.Done). Required.
	Stop func() blitzio.Future[struct{}]
	// Handle takes each accepted connection (and from then on owns it). Returning false
	// ends the loop: Run then returns nil. Required.
	Handle func(co *blitzio.Co, a blitzio.Accepted) bool
	// Logf reports an accept error that Run retries; nil means log.Printf.
	Logf func(format string, args ...any)
	// Sleep waits out a back-off; nil means blitzio.Sleep. Tests replace it to record
	// the delays without waiting.
	Sleep func(d time.Duration) blitzio.Future[struct{}]
}

// Run accepts connections from l and passes each to cfg.Handle, until cfg.Stop is ready
// (Run returns nil), Handle returns false (nil), or the listener is closed (Run returns
// the accept error, which wraps net.ErrClosed). Any other accept error, temporary or
// unknown, does not stop the server: it is logged and the accept is retried after a
// back-off of MinDelay, doubling with each error in a row up to MaxDelay. The back-off is
// cut short by cfg.Stop. (The listener itself already waits and retries when the process
// is out of file descriptors, so such errors do not reach Run.)
//
// Run is called from a blitzio.Async function, with its *blitzio.Co.
func Run(co *blitzio.Co, l Listener, cfg Config) error {
	logf, sleep := cfg.Logf, cfg.Sleep
	if logf == nil {
		logf = log.Printf
	}
	if sleep == nil {
		sleep = func(d time.Duration) blitzio.Future[struct{}] { return blitzio.Sleep(d) }
	}
	var delay time.Duration
	for {
		sel := blitzio.Await(co, blitzio.Select2(l.Accept(), cfg.Stop()))
		if sel.Index == 1 {
			return nil
		}
		if err := sel.V1.Err; err != nil {
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			delay = min(max(2*delay, MinDelay), MaxDelay)
			logf("accept error: %v; retrying in %v", err, delay)
			if blitzio.Await(co, blitzio.Select2(sleep(delay), cfg.Stop())).Index == 1 {
				return nil
			}
			continue
		}
		delay = 0
		if !cfg.Handle(co, sel.V1.Value) {
			return nil
		}
	}
}
