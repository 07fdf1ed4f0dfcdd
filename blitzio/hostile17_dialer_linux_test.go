//go:build linux

package blitzio

import (
	"errors"
	"net"
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
