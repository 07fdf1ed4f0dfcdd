package netload

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// EchoConfig shapes an echo load.
type EchoConfig struct {
	Conns int // connections, each driven by its own goroutine; > 0
	Size  int // message size in bytes; > 0
	// Timeout bounds the dials and each Run (DefaultTimeout if zero); a server that stops
	// answering fails the run with a timeout error.
	Timeout time.Duration
}

// EchoClient drives a closed-loop echo load: on each connection, write one message,
// read the same number of bytes back, check they are the bytes sent, repeat. Each
// message carries its connection's number and a sequence number, so an echo that
// arrives on the wrong connection, or late, or twice, fails the check.
type EchoClient struct {
	cfg   EchoConfig
	conns []*net.TCPConn
	out   [][]byte // per connection: the message being sent
	in    [][]byte // per connection: the echo being read
	seq   []uint64
	mu    sync.Mutex // serialises Run and Close
	bad   bool       // an earlier Run failed: the connections are in an unknown state
}

// DialEcho opens cfg.Conns connections to the echo server at addr.
func DialEcho(ctx context.Context, addr string, cfg EchoConfig) (*EchoClient, error) {
	if cfg.Conns <= 0 || cfg.Conns > MaxConns || cfg.Size <= 0 || cfg.Size > MaxMsgSize {
		return nil, fmt.Errorf("netload: DialEcho: Conns %d must be within [1, %d] and Size %d within [1, %d]", cfg.Conns, MaxConns, cfg.Size, MaxMsgSize)
	}
	conns, err := dialAll(ctx, addr, cfg.Conns, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	c := &EchoClient{cfg: cfg, conns: conns, out: make([][]byte, cfg.Conns), in: make([][]byte, cfg.Conns), seq: make([]uint64, cfg.Conns)}
	for i := range conns {
		c.out[i] = make([]byte, cfg.Size)
		c.in[i] = make([]byte, cfg.Size)
		for j := range c.out[i] {
			c.out[i][j] = byte(i*7 + j)
		}
	}
	return c, nil
}

// stamp writes the connection number and sequence number into the message's first
// bytes (as many as fit), so messages differ between connections and between rounds.
func stamp(msg []byte, conn int, seq uint64) {
	var hdr [16]byte
	binary.LittleEndian.PutUint64(hdr[:8], uint64(conn))
	binary.LittleEndian.PutUint64(hdr[8:], seq)
	copy(msg, hdr[:])
}

// Run makes every connection do perConn round trips, all connections at once, and
// returns the totals. It fails with the first errors seen (a connection error, a
// timeout, or ErrMismatch); after a failure the client is broken and must be closed.
func (c *EchoClient) Run(ctx context.Context, perConn int) (Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bad || c.conns == nil {
		return Result{}, ErrClosed
	}
	if perConn <= 0 {
		return Result{}, fmt.Errorf("netload: EchoClient.Run: perConn %d, want > 0", perConn)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	release, err := bindConns(ctx, c.conns, runDeadline(ctx, c.cfg.Timeout))
	defer release()
	if err != nil {
		c.bad = true
		return Result{}, err
	}
	var errs errList
	var wg sync.WaitGroup
	start := time.Now()
	wg.Add(len(c.conns))
	for i := range c.conns {
		go func() {
			defer wg.Done()
			if err := c.roundTrips(i, perConn); err != nil {
				errs.add(fmt.Errorf("netload: echo conn %d: %w", i, ctxErr(ctx, err)))
			}
		}()
	}
	wg.Wait()
	res := Result{Elapsed: time.Since(start)}
	if err := errs.err(); err != nil {
		c.bad = true
		return res, err
	}
	res.Ops = int64(perConn) * int64(len(c.conns))
	res.Bytes = res.Ops * int64(c.cfg.Size)
	return res, nil
}

func (c *EchoClient) roundTrips(i, n int) error {
	conn, out, in := c.conns[i], c.out[i], c.in[i]
	for range n {
		c.seq[i]++
		stamp(out, i, c.seq[i])
		if _, err := conn.Write(out); err != nil {
			return err
		}
		if _, err := io.ReadFull(conn, in); err != nil {
			return err
		}
		if !bytes.Equal(in, out) {
			return fmt.Errorf("%w: message %d", ErrMismatch, c.seq[i])
		}
	}
	return nil
}

// Close closes every connection; it waits for a Run in progress to end. It is safe to
// call more than once.
func (c *EchoClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := closeAll(c.conns)
	c.conns = nil
	return err
}

func closeAll[C io.Closer](conns []C) error {
	var errs []error
	for _, cn := range conns {
		if err := cn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
