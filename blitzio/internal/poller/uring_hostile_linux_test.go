//go:build linux

package poller

import (
	"bytes"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Regression: with more submissions than the SQ ring holds, Poll(-1) used to submit one
// ring's worth and then wait for a completion, leaving the rest in the backlog: a
// registration that was the only one to become ready was never armed, and Poll hung.
func TestUringBacklogSubmittedBeforeWaiting(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 2})
	const n = 10
	peers := make([]int, n)
	for i := range n {
		a, b := socketpair(t)
		defer closeFd(t, a)
		defer closeFd(t, b)
		peers[i] = b
		if err := r.Register(a, uint64(i), Read); err != nil {
			t.Fatal(err)
		}
	}
	unix.Write(peers[n-1], []byte("x")) // only the last registration becomes ready
	evs := make([]Event, 4)
	for {
		k, err := r.Poll(evs, -1)
		if err != nil {
			t.Fatal(err)
		}
		if k > 0 {
			if evs[0].Token != n-1 {
				t.Fatalf("event for token %d, want %d", evs[0].Token, n-1)
			}
			return
		}
	}
}

// A Send's buffer is referenced only by the poller while the kernel reads it: garbage
// collections in the meantime must neither free nor move it.
func TestUringSendBufferSurvivesGC(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 8})
	a, b := socketpair(t)
	defer closeFd(t, a)
	defer closeFd(t, b)
	const size = 4 << 20
	func() {
		p := make([]byte, size)
		for i := range p {
			p[i] = byte(i * 13)
		}
		if err := r.Send(a, 1, p); err != nil {
			t.Fatal(err)
		}
	}()
	r.Flush() // the send starts, fills the socket buffer and waits for room
	for range 5 {
		runtime.GC()
		// Garbage of the same size class, to reuse freed memory if it were freed.
		junk := make([]byte, size)
		for i := range junk {
			junk[i] = 0xEE
		}
		runtime.KeepAlive(junk)
	}
	var got []byte
	buf := make([]byte, 1<<16)
	sent := int32(-1)
	deadline := time.Now().Add(20 * time.Second)
	evs := make([]Event, 4)
	for sent < 0 || len(got) < int(sent) {
		if time.Now().After(deadline) {
			t.Fatalf("received %d bytes, send result %d", len(got), sent)
		}
		if n, _ := unix.Read(b, buf); n > 0 {
			got = append(got, buf[:n]...)
		}
		if n, _ := r.Poll(evs, time.Millisecond); n > 0 && evs[0].Token == 1 {
			sent = evs[0].Res
			if sent <= 0 {
				t.Fatalf("send: %s", errnoName(sent))
			}
		}
	}
	for i, c := range got {
		if c != byte(i*13) {
			t.Fatalf("byte %d = %#x, want %#x: the buffer changed under the kernel", i, c, byte(i*13))
		}
	}
}

// Echo straight from a provided buffer: Send accepts memory outside the Go heap, and the
// buffer goes back to the ring only after the send completes.
func TestUringEchoFromProvidedBuffer(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 8, Buffers: 2, BufferSize: 128})
	requireFeature(t, r, ProvidedBuffers, "provided-buffer rings")
	a, b := socketpair(t)
	defer closeFd(t, a)
	defer closeFd(t, b)
	msg := []byte(strings.Repeat("echo!", 20))
	for round := range 50 {
		unix.Write(b, msg)
		r.Recv(a, 1)
		var id int32 = -1
		var n int32
		pollUntil(t, r, "receive", func(ev Event) bool {
			if ev.Token == 1 && ev.Res > 0 {
				id, n = ev.Buf, ev.Res
				return true
			}
			return false
		})
		r.Send(a, 2, r.Buffer(id, int(n)))
		pollUntil(t, r, "send", func(ev Event) bool { return ev.Token == 2 && ev.Res == n })
		r.Release(id)
		got := make([]byte, len(msg))
		unix.SetNonblock(b, false)
		for k := 0; k < int(n); {
			m, err := unix.Read(b, got[k:n])
			if err != nil {
				t.Fatal(err)
			}
			k += m
		}
		if !bytes.Equal(got[:n], msg[:n]) {
			t.Fatalf("round %d: echoed %q", round, got[:n])
		}
		unix.SetNonblock(b, true)
	}
}

// When cancelled operations do not complete in time, Close must not unmap or unpin the
// memory the kernel may still use: it leaks it and says so.
func TestUringCloseTimeoutLeaksInsteadOfFreeing(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	old := uringCloseWait
	uringCloseWait = 0 // give up at once: the cancellations are not even submitted
	defer func() { uringCloseWait = old }()
	p, err := NewIOUringConfig(IOUringConfig{Entries: 8})
	if err != nil {
		t.Skip(err)
	}
	r := p.(*ioUring)
	a, b := socketpair(t)
	defer closeFd(t, a)
	defer closeFd(t, b)
	r.Recv(a, 1)
	r.Send(a, 2, make([]byte, 16))
	r.Flush()
	uringLeakMu.Lock()
	before := len(uringLeaked)
	uringLeakMu.Unlock()
	err = r.Close()
	if err == nil || !strings.Contains(err.Error(), "still in flight") {
		t.Fatalf("Close = %v, want an in-flight error", err)
	}
	uringLeakMu.Lock()
	after := len(uringLeaked)
	uringLeakMu.Unlock()
	if after <= before {
		t.Errorf("nothing kept in the leak list")
	}
	if !r.bufs.leak || r.bufs.bufMem == nil {
		t.Errorf("provided buffers were unmapped with receives possibly in flight")
	}
	if err2 := r.Close(); err2 != err {
		t.Errorf("second Close = %v, want the first's %v", err2, err)
	}
}

// Wake, Register and Flush racing Close: each either works or reports the ring closed;
// none writes to a closed (and maybe reused) eventfd or crashes.
func TestUringCloseRacesCallers(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for range 20 {
		p, err := NewIOUringConfig(IOUringConfig{Entries: 4})
		if err != nil {
			t.Skip(err)
		}
		r := p.(*ioUring)
		a, b := socketpair(t)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 50 {
					r.Wake()
					if g == 0 && i == 0 {
						r.Register(a, 1, Read)
					}
					r.Flush()
				}
			}()
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		unix.Close(a)
		unix.Close(b)
	}
}

// Regression: a Flush that had passed its closed check when Close ran used to submit
// through rings Close had just unmapped (a segmentation fault) or an fd it had closed.
func TestUringFlushRacesClose(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	for range 100 {
		p, err := NewIOUringConfig(IOUringConfig{Entries: 2})
		if err != nil {
			t.Skip(err)
		}
		r := p.(*ioUring)
		a, b := socketpair(t)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := 0; ; i++ {
					if g == 0 {
						r.Send(a, uint64(i), []byte{1})
					}
					if err := r.Flush(); err != nil {
						return
					}
					if i%8 == 7 {
						runtime.Gosched() // let Close run on this 2-core machine
					}
				}
			}()
		}
		close(start)
		time.Sleep(100 * time.Microsecond)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		unix.Close(a)
		unix.Close(b)
	}
}

// Two Closes at once: both wait for the one release and report its result (nil).
func TestUringConcurrentClose(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for range 20 {
		p, err := NewIOUringConfig(IOUringConfig{Entries: 4})
		if err != nil {
			t.Skip(err)
		}
		a, b := socketpair(t)
		p.Register(a, 1, Read)
		p.(Completer).Recv(a, 2)
		errs := make(chan error, 3)
		for range 3 {
			go func() { errs <- p.Close() }()
		}
		for range 3 {
			if err := <-errs; err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
		unix.Close(a)
		unix.Close(b)
	}
}

// More completions at once than the CQ ring holds: the kernel keeps the excess on its
// overflow list (IORING_FEAT_NODROP) and may end multishot polls; Poll must flush the
// list and re-arm the polls, so that every registration still reports later readiness.
func TestUringCQOverflowRearms(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 1}) // CQ ring of 4 entries
	const n = 40
	rd := make([]int, n)
	wr := make([]int, n)
	for i := range n {
		rd[i], wr[i] = socketpair(t)
		defer closeFd(t, rd[i])
		defer closeFd(t, wr[i])
		if err := r.Register(rd[i], uint64(i), Read|Write); err != nil {
			t.Fatal(err)
		}
	}
	// Every registration is writable at once: 40 completions for a 4-entry CQ ring.
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	overflowed := atomic.LoadUint32(r.sqFlags)&uringSQCQOverflow != 0
	writable := map[uint64]bool{}
	evs := make([]Event, 2)
	deadline := time.Now().Add(20 * time.Second)
	for len(writable) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d registrations reported Writable", len(writable), n)
		}
		k, err := r.Poll(evs, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs[:k] {
			if ev.Ready&Writable != 0 {
				writable[ev.Token] = true
			}
		}
		if k == 0 {
			r.Poll(evs, time.Millisecond)
		}
	}
	if !overflowed {
		t.Errorf("the CQ ring did not overflow: this test did not test the overflow path")
	}
	// Then all of them become readable together: each must still be armed.
	for _, fd := range wr {
		unix.Write(fd, []byte{1})
	}
	readable := map[uint64]bool{}
	for len(readable) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d registrations reported Readable after the overflow", len(readable), n)
		}
		k, err := r.Poll(evs, time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs[:k] {
			if ev.Ready&Readable != 0 {
				readable[ev.Token] = true
			}
		}
	}
	for i := range n {
		if err := r.Deregister(rd[i], uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
}
