//go:build linux

package blitzio

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hangBound is how long a test waits for something that takes microseconds when the
// library is right; it only turns a hang into a clear failure (never a timing assert).
const hangBound = 3 * time.Second

// TestHostile4SameTaskTwoWaitersDropLosesWakeup: two futures of ONE task wait for the
// same socket to turn readable (Join2 of a receive and a bounded receive). When the
// bounded one times out it is dropped, and its Drop removes the waker from the socket's
// list by task identity (Waker.WillWake), which also un-registers the other future that
// is still waiting. A datagram that then arrives wakes nobody: the receive hangs.
func TestHostile4SameTaskTwoWaitersDropLosesWakeup(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 20*time.Second)
		rt, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		c, err := ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		snd, err := net.DialUDP("udp4", nil, c.UDPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer snd.Close()

		b1, b2 := make([]byte, 64), make([]byte, 64)
		join := Join2(
			c.RecvFrom(b1),
			// Polled second: it times out (and is dropped) after the first receive
			// registered; then a datagram is sent for the first receive.
			Map(Timeout(time.Millisecond, c.RecvFrom(b2)), func(r Result[Result[Datagram[*net.UDPAddr]]]) error {
				_, err := snd.Write([]byte("hello"))
				return err
			}),
		)
		// Sleep first: a timer wake polls it before the join, so a join that only
		// completes because of that unrelated wake still counts as a hang.
		sel := blockOn(t, rt, Select2(Sleep(hangBound), join))
		if sel.Index == 0 {
			t.Fatalf("RecvFrom never woke for a datagram sent %v ago: a dropped sibling future of the same task removed its waker", hangBound)
		}
		r := sel.V2.V1
		if r.Err != nil || string(b1[:r.Value.N]) != "hello" || sel.V2.V2 != nil {
			t.Fatalf("got %+v %q, send err %v", r, b1[:r.Value.N], sel.V2.V2)
		}
	})
}

// TestHostile4SameTaskReadAndReadableTimeoutTCP is the TCP form: a task reads a stream
// while, joined with it, a keep-alive style Readable with a Timeout expires.
func TestHostile4SameTaskReadAndReadableTimeoutTCP(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 20*time.Second)
		rt, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		client, server := connPair(t, rt)
		rh, _ := server.Split()
		buf := make([]byte, 16)
		join := Join2(
			rh.Read(buf),
			Map(Timeout(time.Millisecond, rh.Readable()), func(Result[error]) Result[int] {
				// the peer writes once the probe gave up
				n, err := unix.Write(int(client.fd.fd), []byte("ping"))
				return Result[int]{Value: n, Err: err}
			}),
		)
		sel := blockOn(t, rt, Select2(Sleep(hangBound), join))
		if sel.Index == 0 {
			t.Fatalf("Read never woke for bytes written %v ago: the dropped Readable (same task) removed its waker", hangBound)
		}
		if r := sel.V2.V1; r.Err != nil || string(buf[:r.Value]) != "ping" {
			t.Fatalf("read %+v %q", r, buf[:r.Value])
		}
	})
}
