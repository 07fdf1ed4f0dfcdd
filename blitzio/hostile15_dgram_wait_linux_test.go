//go:build linux

package blitzio

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hostile15Name is an abstract Unix address unique to the test (and a suffix).
func hostile15Name(t *testing.T, suffix string) string {
	return fmt.Sprintf("@blitzio-h15-%d-%s-%s", os.Getpid(), t.Name(), suffix)
}

// hostile15CPU returns the process's user+system CPU time.
func hostile15CPU(t *testing.T) time.Duration {
	t.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// An unconnected Unix datagram socket sends to a named receiver whose queue is full
// (net.unix.max_dgram_qlen datagrams, 10 by default: small datagrams fill the queue long
// before the sender's buffer), here filled by another sender. sendto fails with EAGAIN,
// yet poll reports the sender writable (its own buffer has room), and the failed send
// even wakes the sender's own socket (the datagram it allocated is freed, and
// unix_write_space wakes the waiters with POLLOUT): every backend reports an edge at
// once, and the waiting SendTo retries, fails, and is woken again, one core busy until
// the receiver reads (io_uring's one-shot write poll completes at once as well). No
// wake-up comes from the receiver draining a queue it did not fill with our datagrams:
// only a sender connected to the receiver is put on its peer-wait queue. A SendTo that
// waits there must complete once the receiver has read its queue, and must not spin
// meanwhile.
//
// DEFECT (all backends): it spins (100% of a core while it waits). Proposed fix: for
// AF_UNIX/SOCK_DGRAM, an EAGAIN while poll(2) says POLLOUT means the receiver's queue
// is full; back off on a timer (0.1 ms doubling to 20 ms) instead of waiting for
// readiness (net_dgram.go: pollSendTo and sendToFuture).
func TestHostile15UnixgramSendToFullReceiver(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		rxName := hostile15Name(t, "rx")
		rx, err := ListenUnixgram("unixgram", &net.UnixAddr{Name: rxName, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer rx.Close()
		tx, err := ListenUnixgram("unixgram", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Close()
		dst := &net.UnixAddr{Name: rxName, Net: "unixgram"}
		msg := []byte("0123456789abcdef")

		// Fill the receiver's queue from another unbound socket, until EAGAIN.
		filler, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(filler)
		sent := 0
		for {
			err := unix.Sendto(filler, msg, 0, &unix.SockaddrUnix{Name: rxName})
			if err == unix.EAGAIN {
				break
			}
			if err != nil {
				t.Fatalf("filling the receiver: %v", err)
			}
			if sent++; sent > 100000 {
				t.Fatal("the receiver's queue never filled")
			}
		}
		t.Logf("%d datagrams queued before sendto said EAGAIN", sent)
		pending := tx.SendTo(msg, dst)

		// The waiting SendTo, in a task; the receiver reads nothing for a while.
		done := make(chan Result[int], 1)
		Spawn(rt, Async(func(co *Co) struct{} {
			done <- Await(co, pending)
			return struct{}{}
		}))
		turns0, cpu0, wall0 := rt.io.parkedTurns.Load(), hostile15CPU(t), time.Now()
		select {
		case r := <-done:
			t.Fatalf("SendTo finished while the receiver's queue is full: %+v", r)
		case <-time.After(300 * time.Millisecond):
		}
		turns, cpu, wall := rt.io.parkedTurns.Load()-turns0, hostile15CPU(t)-cpu0, time.Since(wall0)
		t.Logf("while waiting: %d driver turns, %v CPU in %v", turns, cpu, wall)
		spin := turns > 2000 || cpu > wall/2

		// The receiver drains its queue: the waiting SendTo must complete.
		buf := make([]byte, 64)
		for i := 0; i < sent; i++ {
			r := blockOn(t, rt, Timeout(hangBound, rx.RecvFrom(buf)))
			if r.Err != nil || r.Value.Err != nil {
				t.Fatalf("RecvFrom %d: %+v", i, r)
			}
		}
		select {
		case r := <-done:
			if r.Err != nil || r.Value != len(msg) {
				t.Fatalf("the waiting SendTo: %+v", r)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("the receiver read its whole queue, and the waiting SendTo did not complete within 5s (it waits for a wake-up the kernel never sends to an unconnected sender)")
		}
		if spin {
			t.Errorf("a SendTo waiting for a full receiver spun: %d driver turns, %v CPU in %v (poll reports writable, sendto says EAGAIN)", turns, cpu, wall)
		}
		r := blockOn(t, rt, Timeout(hangBound, rx.RecvFrom(buf)))
		if r.Err != nil || r.Value.Err != nil || r.Value.Value.N != len(msg) {
			t.Fatalf("RecvFrom of the last datagram: %+v", r)
		}
	})
}
