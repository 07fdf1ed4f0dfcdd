//go:build linux

package poller

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// FuzzUringRingIndices drives a 2-entry ring with a byte-coded script of submissions,
// flushes and polls with event buffers of varying sizes, so that the SQ ring, the
// backlog and the CQ ring (8 entries) wrap in every interleaving the script picks. Every
// send must complete exactly once, and the ring must end with only the wake poll in
// flight.
func FuzzUringRingIndices(f *testing.F) {
	f.Add([]byte{0x13, 0x80, 0x47, 0xc2, 0x0f, 0x81, 0xff, 0x40})
	f.Add([]byte{0x3f, 0x3f, 0x3f, 0x3f, 0xc0})
	f.Add([]byte{0x01, 0x82, 0x01, 0x82, 0x01, 0xc7})
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 64 {
			script = script[:64]
		}
		defer watchdog(t, 60*time.Second)()
		r := newTestUring(t, IOUringConfig{Entries: 2})
		a, b := socketpair(t)
		defer closeFd(t, a)
		defer closeFd(t, b)
		next := uint64(0)
		done := map[uint64]bool{}
		evs := make([]Event, 8)
		rbuf := make([]byte, 1<<16)
		reap := func(n int) {
			for _, ev := range evs[:n] {
				if ev.Op != OpSend || ev.Res != 1 {
					t.Fatalf("completion %+v (%s)", ev, errnoName(ev.Res))
				}
				if done[ev.Token] || ev.Token >= next {
					t.Fatalf("token %d completed twice or never submitted", ev.Token)
				}
				done[ev.Token] = true
			}
			unix.Read(b, rbuf)
		}
		for _, c := range script {
			arg := int(c & 0x3f)
			switch c >> 6 {
			case 0, 1: // submit arg+1 sends
				for range arg + 1 {
					if err := r.Send(a, next, []byte{1}); err != nil {
						t.Fatal(err)
					}
					next++
				}
			case 2: // flush
				if err := r.Flush(); err != nil {
					t.Fatal(err)
				}
			case 3: // poll with a buffer of 1..8 events
				n, err := r.Poll(evs[:1+arg%8], 0)
				if err != nil {
					t.Fatal(err)
				}
				reap(n)
			}
		}
		deadline := time.Now().Add(20 * time.Second)
		for uint64(len(done)) < next {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d sends completed", len(done), next)
			}
			n, err := r.Poll(evs, 10*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			reap(n)
		}
		r.mu.Lock()
		left, backlog := r.inflight, len(r.backlog)
		r.mu.Unlock()
		if left != 1 || backlog != 0 {
			t.Fatalf("%d operations in flight and %d queued, want only the wake poll", left, backlog)
		}
	})
}
