package netload

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// UDPConfig shapes a UDP echo load.
type UDPConfig struct {
	Sockets int // connected UDP sockets, each driven by its own goroutine; > 0
	Size    int // datagram size in bytes, 16 to 65,507
	// Wait is how long a socket waits for an echo before counting the datagram lost and
	// sending the next (default 200ms).
	Wait time.Duration
	// MaxLost is how many lost datagrams a Run tolerates before failing with
	// ErrTooManyLost; zero means 1% of the datagrams sent, plus 10.
	MaxLost int
	// Timeout bounds each Run (DefaultTimeout if zero).
	Timeout time.Duration
}

// UDPClient drives a closed-loop UDP echo load: each socket sends one datagram and waits
// for it to come back before sending the next. Each datagram carries its socket's
// number and a sequence number: a late echo of a datagram already counted lost is
// skipped, and one that matches neither is an ErrMismatch.
type UDPClient struct {
	cfg   UDPConfig
	socks []*net.UDPConn
	seq   []uint64
	mu    sync.Mutex
	bad   bool
}

// DialUDP opens cfg.Sockets UDP sockets connected to the server at addr.
func DialUDP(ctx context.Context, addr string, cfg UDPConfig) (*UDPClient, error) {
	if cfg.Sockets <= 0 || cfg.Sockets > MaxConns || cfg.Size < 16 || cfg.Size > 65507 {
		return nil, fmt.Errorf("netload: DialUDP: Sockets %d must be > 0 and Size %d within [16, 65507]", cfg.Sockets, cfg.Size)
	}
	if err := checkLoopback(addr); err != nil {
		return nil, err
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 200 * time.Millisecond
	}
	c := &UDPClient{cfg: cfg, seq: make([]uint64, cfg.Sockets)}
	var d net.Dialer
	for range cfg.Sockets {
		nc, err := d.DialContext(ctx, "udp", addr)
		if err != nil {
			closeAll(c.socks)
			return nil, err
		}
		c.socks = append(c.socks, nc.(*net.UDPConn))
	}
	return c, nil
}

// Run makes every socket get perSocket datagrams echoed (resending after each loss),
// all sockets at once. Result.Ops counts datagrams echoed back, Result.Lost those that
// were not back within Wait.
func (c *UDPClient) Run(ctx context.Context, perSocket int) (Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bad || c.socks == nil {
		return Result{}, ErrClosed
	}
	if perSocket <= 0 {
		return Result{}, fmt.Errorf("netload: UDPClient.Run: perSocket %d, want > 0", perSocket)
	}
	deadline := runDeadline(ctx, c.cfg.Timeout)
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	release, err := bindConns(ctx, c.socks, deadline)
	defer release()
	if err != nil {
		c.bad = true
		return Result{}, err
	}
	maxLost := int64(c.cfg.MaxLost)
	if maxLost <= 0 {
		maxLost = int64(perSocket)*int64(len(c.socks))/100 + 10
	}
	var mu sync.Mutex
	var total Result
	var lost atomic.Int64 // shared, so a run where nothing comes back stops at maxLost
	var errs errList
	var wg sync.WaitGroup
	start := time.Now()
	wg.Add(len(c.socks))
	for i := range c.socks {
		go func() {
			defer wg.Done()
			r, err := c.exchange(ctx, i, perSocket, deadline, &lost, maxLost)
			mu.Lock()
			total.add(r)
			mu.Unlock()
			if err != nil {
				errs.add(fmt.Errorf("netload: udp socket %d: %w", i, ctxErr(ctx, err)))
			}
		}()
	}
	wg.Wait()
	total.Elapsed = time.Since(start)
	if err := errs.err(); err != nil {
		c.bad = true
		return total, err
	}
	return total, nil
}

func (c *UDPClient) exchange(ctx context.Context, i, n int, deadline time.Time, lost *atomic.Int64, maxLost int64) (Result, error) {
	var r Result
	s := c.socks[i]
	out := make([]byte, c.cfg.Size)
	in := make([]byte, c.cfg.Size+1) // one spare byte: a longer datagram is detected, not truncated to a match
	for j := range out {
		out[j] = byte(i + j)
	}
	for r.Ops < int64(n) {
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		c.seq[i]++
		seq := c.seq[i]
		binary.LittleEndian.PutUint64(out[:8], uint64(i))
		binary.LittleEndian.PutUint64(out[8:16], seq)
		if _, err := s.Write(out); err != nil {
			return r, err
		}
		wait := time.Now().Add(c.cfg.Wait)
		if wait.After(deadline) {
			wait = deadline
		}
		if err := s.SetReadDeadline(wait); err != nil {
			return r, err
		}
		for {
			m, err := s.Read(in)
			if errors.Is(err, os.ErrDeadlineExceeded) && time.Now().Before(deadline) && ctx.Err() == nil {
				r.Lost++
				if l := lost.Add(1); l > maxLost {
					return r, fmt.Errorf("%w: %d lost, %d allowed", ErrTooManyLost, l, maxLost)
				}
				break
			}
			if err != nil {
				return r, err
			}
			got := binary.LittleEndian.Uint64(in[8:16])
			if m == len(out) && binary.LittleEndian.Uint64(in[:8]) == uint64(i) && got < seq {
				continue // the late echo of a datagram already counted lost
			}
			if m != len(out) || !bytes.Equal(in[:m], out) {
				return r, fmt.Errorf("%w: datagram %d: got %d bytes", ErrMismatch, seq, m)
			}
			r.Ops++
			r.Bytes += int64(m)
			break
		}
	}
	return r, nil
}

// Close closes every socket; it waits for a Run in progress to end. It is safe to
// call more than once.
func (c *UDPClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := closeAll(c.socks)
	c.socks = nil
	return err
}
