package netload

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Errors a run reports, wrapped with the connection they happened on; test them with
// errors.Is.
var (
	// ErrMismatch: an echo came back different from what was sent.
	ErrMismatch = errors.New("netload: echoed bytes differ from the bytes sent")
	// ErrBadResponse: an HTTP response was malformed, or not the one expected.
	ErrBadResponse = errors.New("netload: bad HTTP response")
	// ErrTooManyLost: more UDP datagrams were lost than the run allows.
	ErrTooManyLost = errors.New("netload: too many datagrams lost")
	// ErrClosed: the client was used after Close, or after an earlier error broke it.
	ErrClosed = errors.New("netload: client closed or broken by an earlier error")
)

// Bounds on a load's shape: beyond them a config is rejected with an error rather
// than attempted (a million connections would fail on open files anyway, after a long
// wait, and a giant message would be one giant allocation per connection).
const (
	// MaxConns is the most connections (or UDP sockets) one client opens.
	MaxConns = 1 << 20
	// MaxMsgSize is the largest echo message.
	MaxMsgSize = 64 << 20
	// MaxPipeline is the deepest HTTP pipeline.
	MaxPipeline = 1 << 12
)

// DefaultTimeout bounds one Run (or one Connect, or one idle-memory measurement) when
// the config gives no timeout and the context has no earlier deadline.
const DefaultTimeout = 30 * time.Second

// Result is what one run measured.
type Result struct {
	// Ops counts completed operations: echo round trips, HTTP responses, connections
	// served, or datagrams echoed back.
	Ops int64
	// Bytes counts payload bytes that came back (echoes and response bodies).
	Bytes int64
	// Lost counts UDP datagrams that did not come back in time (UDP only).
	Lost int64
	// Elapsed is the wall time of the run.
	Elapsed time.Duration
}

// OpsPerSec is Ops divided by Elapsed; zero for an empty run.
func (r Result) OpsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// BytesPerSec is Bytes divided by Elapsed; zero for an empty run.
func (r Result) BytesPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / r.Elapsed.Seconds()
}

func (r *Result) add(o Result) {
	r.Ops += o.Ops
	r.Bytes += o.Bytes
	r.Lost += o.Lost
}

// maxErrors is how many errors a run keeps; the rest are counted.
const maxErrors = 8

// errList collects the errors of a run's connections, keeping the first few.
type errList struct {
	mu    sync.Mutex
	errs  []error
	extra int
}

func (l *errList) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) < maxErrors {
		l.errs = append(l.errs, err)
	} else {
		l.extra++
	}
}

func (l *errList) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.extra > 0 {
		return errors.Join(append(l.errs, fmt.Errorf("netload: and %d more errors", l.extra))...)
	}
	return errors.Join(l.errs...)
}

// runDeadline is when a run must end: the context's deadline, or timeout (DefaultTimeout
// if zero) from now, whichever is first.
func runDeadline(ctx context.Context, timeout time.Duration) time.Time {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	d := time.Now().Add(timeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	return d
}

// bindConns sets the run's deadline on every connection and makes the context's
// cancellation expire them at once, so a blocked read or write returns instead of
// hanging the run. The returned function undoes the cancellation hook.
func bindConns[C interface{ SetDeadline(time.Time) error }](ctx context.Context, conns []C, deadline time.Time) (release func() bool, err error) {
	for _, c := range conns {
		if err := c.SetDeadline(deadline); err != nil {
			return func() bool { return true }, err
		}
	}
	return context.AfterFunc(ctx, func() {
		past := time.Unix(1, 0)
		for _, c := range conns {
			c.SetDeadline(past)
		}
	}), nil
}

// ctxErr prefers the context's error over the timeout error its cancellation caused.
func ctxErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return err
}

// ErrNotLoopback: a client was given an address outside the loopback range. The load
// clients only ever send to this machine.
var ErrNotLoopback = errors.New("netload: address is not a loopback address")

// checkLoopback accepts "host:port" where host is a loopback IP (127.0.0.0/8, ::1) or
// "localhost".
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("netload: address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %q", ErrNotLoopback, addr)
}

// dialAll opens n TCP connections to addr, at most 32 dials at a time (a burst of
// thousands of SYNs overflows the listen backlog and stalls on SYN retries).
func dialAll(ctx context.Context, addr string, n int, timeout time.Duration) ([]*net.TCPConn, error) {
	if n <= 0 || n > MaxConns {
		return nil, fmt.Errorf("netload: connection count %d, want 1 to %d", n, MaxConns)
	}
	if err := checkLoopback(addr); err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conns := make([]*net.TCPConn, n)
	var errs errList
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	var d net.Dialer
	for i := range conns {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				errs.add(fmt.Errorf("netload: dial %d of %d: %w", i+1, n, err))
				cancel() // one failure fails the set: stop the other dials
				return
			}
			conns[i] = c.(*net.TCPConn)
		}()
	}
	wg.Wait()
	if err := errs.err(); err != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return nil, err
	}
	return conns, nil
}
