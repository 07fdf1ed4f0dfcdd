//go:build linux

package blitzio

import (
	"errors"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestHostile17DialerNegativeTimeout: a Dialer whose Timeout is negative (a deadline
// computed as time.Until of a moment already past) fails at once with a timeout, as
// net.Dialer's does ("including negative, for historical reasons"). Before, only a
// positive Timeout was applied: a negative one meant no bound at all, and the dial went
// on (here it connected; toward a silent address it would wait for minutes).
func TestHostile17DialerNegativeTimeout(t *testing.T) {
	netWatchdog(t, 60*time.Second)
	rt := newRT(t, Config{})
	live := h16Live(t, net.IPv4(127, 0, 0, 1))
	for _, to := range []time.Duration{-time.Nanosecond, -time.Hour} {
		nd := net.Dialer{Timeout: to}
		nc, nerr := nd.Dial("tcp", live.String())
		if nerr == nil {
			nc.Close()
		}
		d := &Dialer{Timeout: to}
		r := blockOn(t, rt, d.Dial("tcp", live.String()))
		if r.Err == nil {
			r.Value.Close()
		}
		var ne, nne net.Error
		if !errors.As(nerr, &nne) || !nne.Timeout() {
			t.Fatalf("net.Dialer with Timeout %v: %v, expected a timeout", to, nerr)
		}
		if r.Err == nil || !errors.As(r.Err, &ne) || !ne.Timeout() {
			t.Fatalf("Dialer with Timeout %v: %v, want a timeout as net's (%v)", to, r.Err, nerr)
		}
	}
}

// TestHostile17ControlPanicLeak: a Dialer's Control function that panics or calls
// runtime.Goexit ends the dialing task as any task's code does, and the attempt's
// socket is closed. Before, the socket made for the attempt was closed only when Control
// returned an error: a panic (recovered by the runtime, which carries on) or a Goexit
// leaked one descriptor per dial. A ListenConfig's Control, which runs on the caller's
// goroutine, leaked its socket the same way.
func TestHostile17ControlPanicLeak(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		refused := h16Refused(t, net.IPv4(127, 0, 0, 1))
		// Warm up whatever the runtime opens on first use.
		if r := blockOn(t, rt, Dial("tcp4", refused.String())); r.Err == nil {
			r.Value.Close()
		}
		base := h16CountFDs(t)
		panicking := &Dialer{Control: func(string, string, syscall.RawConn) error { panic("h17 control") }}
		_, err := waitHandle(t, Spawn(rt, panicking.Dial("tcp4", refused.String())))
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Value != "h17 control" {
			t.Fatalf("dial whose Control panics: %v, want a *PanicError", err)
		}
		if n := h16CountFDs(t); n > base {
			t.Fatalf("a dial whose Control panicked left %d descriptors open", n-base)
		}
		exiting := &Dialer{Control: func(string, string, syscall.RawConn) error { runtime.Goexit(); return nil }}
		if _, err := waitHandle(t, Spawn(rt, exiting.Dial("tcp4", refused.String()))); !errors.Is(err, ErrGoexit) {
			t.Fatalf("dial whose Control exits: %v, want ErrGoexit", err)
		}
		if n := h16CountFDs(t); n > base {
			t.Fatalf("a dial whose Control called runtime.Goexit left %d descriptors open", n-base)
		}
	})

	base := h16CountFDs(t)
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		lc := ListenConfig{Control: func(string, string, syscall.RawConn) error { panic("h17 listen control") }}
		lc.Listen("tcp4", "127.0.0.1:0")
	}()
	if recovered != "h17 listen control" {
		t.Fatalf("ListenConfig.Control's panic: recovered %v", recovered)
	}
	if n := h16CountFDs(t); n > base {
		t.Fatalf("a listen whose Control panicked left %d descriptors open", n-base)
	}
}
