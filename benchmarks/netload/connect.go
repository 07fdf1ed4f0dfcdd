package netload

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ConnectConfig shapes a connect/accept load.
type ConnectConfig struct {
	Workers int // concurrent connecting goroutines; > 0
	// Timeout bounds the whole Connect call (DefaultTimeout if zero).
	Timeout time.Duration
}

// Connect opens total connections to the echo server at addr, Workers at a time. Each
// connection is counted once it has been served: the client writes one byte and reads
// its echo, which needs the server to have accepted the connection and run its handler
// (a completed connect alone only proves the kernel's handshake). The client then
// closes with an RST (SO_LINGER 0), so a long run does not exhaust the loopback's
// ephemeral ports with connections in TIME_WAIT.
func Connect(ctx context.Context, addr string, cfg ConnectConfig, total int) (Result, error) {
	if cfg.Workers <= 0 || total <= 0 {
		return Result{}, fmt.Errorf("netload: Connect: Workers %d and total %d must be > 0", cfg.Workers, total)
	}
	if err := checkLoopback(addr); err != nil {
		return Result{}, err
	}
	deadline := runDeadline(ctx, cfg.Timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var next, done atomic.Int64
	var errs errList
	var wg sync.WaitGroup
	start := time.Now()
	d := net.Dialer{}
	workers := min(cfg.Workers, total)
	wg.Add(workers)
	for range workers {
		go func() {
			defer wg.Done()
			var b [1]byte
			for next.Add(1) <= int64(total) {
				if err := connectOnce(ctx, &d, addr, deadline, &b); err != nil {
					errs.add(fmt.Errorf("netload: connect %d: %w", done.Load()+1, ctxErr(ctx, err)))
					cancel() // fail fast: the other workers' dials and reads end too
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	res := Result{Ops: done.Load(), Bytes: done.Load(), Elapsed: time.Since(start)}
	return res, errs.err()
}

func connectOnce(ctx context.Context, d *net.Dialer, addr string, deadline time.Time, b *[1]byte) error {
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	c := nc.(*net.TCPConn)
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := c.SetDeadline(deadline); err != nil {
		c.Close()
		return err
	}
	b[0] = 'c'
	if _, err := c.Write(b[:]); err != nil {
		c.Close()
		return err
	}
	if _, err := c.Read(b[:]); err != nil {
		c.Close()
		return err
	}
	if b[0] != 'c' {
		c.Close()
		return fmt.Errorf("%w: got %q, sent 'c'", ErrMismatch, b[0])
	}
	if err := c.SetLinger(0); err != nil {
		c.Close()
		return err
	}
	return c.Close()
}
