//go:build linux

package poller

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func requireFeature(t testing.TB, r *ioUring, f Features, name string) {
	t.Helper()
	if r.Features()&f == 0 {
		t.Skipf("kernel lacks %s", name)
	}
}

func TestUringMultishotAccept(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 8})
	requireFeature(t, r, MultishotAccept, "multishot accept")
	lfd, port := loopbackListener(t)
	defer closeFd(t, lfd)
	const tok, conns = 99, 50
	if err := r.Accept(lfd, tok); err != nil {
		t.Fatal(err)
	}
	r.Flush()
	var clients []int
	for range conns {
		clients = append(clients, dialLoopback(t, port))
	}
	accepted := map[int]bool{}
	submissions := 1
	evs := make([]Event, 16)
	deadline := time.Now().Add(10 * time.Second)
	for len(accepted) < conns {
		if time.Now().After(deadline) {
			t.Fatalf("accepted %d of %d connections", len(accepted), conns)
		}
		n, err := r.Poll(evs, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs[:n] {
			if ev.Token != tok || ev.Op != OpAccept {
				t.Fatalf("unexpected event %+v", ev)
			}
			if ev.Res < 0 {
				t.Fatalf("accept failed: %s", errnoName(ev.Res))
			}
			if !ev.More {
				// The kernel may end a multishot accept at any time (6.x does
				// after a batch of connections, for fairness): submit again.
				submissions++
				if err := r.Accept(lfd, tok); err != nil {
					t.Fatal(err)
				}
			}
			fd := int(ev.Res)
			if accepted[fd] {
				t.Fatalf("fd %d accepted twice", fd)
			}
			accepted[fd] = true
			fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
			if err != nil || fl&unix.O_NONBLOCK == 0 {
				t.Errorf("accepted fd %d: flags %#x, %v: not non-blocking", fd, fl, err)
			}
			fdfl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
			if err != nil || fdfl&unix.FD_CLOEXEC == 0 {
				t.Errorf("accepted fd %d: not close-on-exec", fd)
			}
		}
	}
	t.Logf("%d connections accepted by %d submissions", conns, submissions)
	if submissions > conns/2 {
		t.Errorf("%d submissions for %d connections: the accept is not multishot", submissions, conns)
	}
	// Cancel ends the multishot accept with -ECANCELED and More unset.
	if err := r.Cancel(tok); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, r, "cancelled accept", func(ev Event) bool {
		return ev.Token == tok && ev.Res == -int32(unix.ECANCELED) && !ev.More
	})
	for fd := range accepted {
		closeFd(t, fd)
	}
	for _, fd := range clients {
		closeFd(t, fd)
	}
}

// recvAll reads what the ring receives on fd (token tok) until want bytes arrived,
// releasing each buffer after copying it, and resubmitting after each completion.
func recvAll(t testing.TB, r *ioUring, fd int, tok uint64, want int) []byte {
	t.Helper()
	var got []byte
	evs := make([]Event, 16)
	deadline := time.Now().Add(20 * time.Second)
	if err := r.Recv(fd, tok); err != nil {
		t.Fatal(err)
	}
	for len(got) < want {
		if time.Now().After(deadline) {
			t.Fatalf("received %d of %d bytes", len(got), want)
		}
		n, err := r.Poll(evs, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs[:n] {
			if ev.Token != tok || ev.Op != OpRecv {
				continue
			}
			if ev.Res < 0 && ev.Res != -int32(unix.ENOBUFS) {
				t.Fatalf("recv: %s", errnoName(ev.Res))
			}
			if ev.Res == 0 {
				t.Fatalf("recv: end of stream after %d of %d bytes", len(got), want)
			}
			if ev.Buf >= 0 {
				got = append(got, r.Buffer(ev.Buf, int(max(ev.Res, 0)))...)
				r.Release(ev.Buf)
			}
			if err := r.Recv(fd, tok); err != nil {
				t.Fatal(err)
			}
		}
	}
	return got
}

func TestUringRecvProvidedBuffers(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	// 4 buffers of 64 bytes: 64 KiB of data needs each buffer reused 250+ times.
	r := newTestUring(t, IOUringConfig{Entries: 4, Buffers: 4, BufferSize: 64})
	requireFeature(t, r, ProvidedBuffers, "provided-buffer rings")
	a, b := socketpair(t)
	defer closeFd(t, a)
	defer closeFd(t, b)
	data := make([]byte, 64<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	done := make(chan error, 1)
	go func() {
		unix.SetNonblock(b, false)
		for p := data; len(p) > 0; {
			n, err := unix.Write(b, p[:min(len(p), 1000)])
			if err != nil {
				done <- err
				return
			}
			p = p[n:]
		}
		done <- nil
	}()
	got := recvAll(t, r, a, 5, len(data))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("received bytes differ from the sent ones")
	}
	// Every buffer is back in the ring.
	r.bufs.mu.Lock()
	for id, h := range r.bufs.held {
		if h {
			t.Errorf("buffer %d still held", id)
		}
	}
	r.bufs.mu.Unlock()
	// End of stream: Res 0.
	closeFd(t, b)
	b, _ = socketpair(t) // keep the deferred close valid
	r.Recv(a, 6)
	pollUntil(t, r, "end of stream", func(ev Event) bool {
		if ev.Token == 6 && ev.Buf >= 0 {
			r.Release(ev.Buf)
		}
		return ev.Token == 6 && ev.Res == 0
	})
}

func TestUringRecvNoBuffers(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 8, Buffers: 2, BufferSize: 16})
	requireFeature(t, r, ProvidedBuffers, "provided-buffer rings")
	a, b := socketpair(t)
	defer closeFd(t, a)
	defer closeFd(t, b)
	var held []int32
	unix.Write(b, make([]byte, 100))
	for len(held) < 2 {
		r.Recv(a, 1)
		pollUntil(t, r, "a receive", func(ev Event) bool {
			if ev.Token == 1 && ev.Buf >= 0 {
				held = append(held, ev.Buf)
			}
			return ev.Token == 1
		})
	}
	// Both buffers held: the next receive fails with ENOBUFS, consuming nothing.
	r.Recv(a, 2)
	pollUntil(t, r, "ENOBUFS", func(ev Event) bool {
		if ev.Token == 2 && ev.Res != -int32(unix.ENOBUFS) {
			t.Fatalf("receive with every buffer held: %+v (%s)", ev, errnoName(ev.Res))
		}
		return ev.Token == 2
	})
	if held[0] == held[1] {
		t.Fatalf("the same buffer %d handed out twice", held[0])
	}
	r.Release(held[0])
	// A released buffer is reused.
	r.Recv(a, 3)
	pollUntil(t, r, "receive after release", func(ev Event) bool {
		if ev.Token == 3 && ev.Buf != held[0] {
			t.Fatalf("receive after release used buffer %d, want %d (%s)", ev.Buf, held[0], errnoName(ev.Res))
		}
		return ev.Token == 3
	})
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("Release of a buffer not held did not panic")
			}
		}()
		r.Release(held[1])
		r.Release(held[1])
	}()
	for _, bad := range []func(){
		func() { r.Buffer(held[1], 1) }, // released above
		func() { r.Buffer(-1, 0) },
		func() { r.Buffer(2, 0) },
		func() { r.Buffer(0, 17) },
		func() { r.Release(1 << 20) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("out-of-range Buffer/Release did not panic")
				}
			}()
			bad()
		}()
	}
}

func TestUringSendLarge(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 8})
	a, b := socketpair(t)
	defer closeFd(t, a)
	defer closeFd(t, b)
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i ^ i>>9)
	}
	var got []byte
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		unix.SetNonblock(b, false)
		buf := make([]byte, 1<<16)
		for len(got) < len(data) {
			n, err := unix.Read(b, buf)
			if n <= 0 {
				t.Errorf("reader: %d, %v", n, err)
				return
			}
			got = append(got, buf[:n]...)
		}
	}()
	// Send, resubmitting the rest after each partial send.
	sent := 0
	for sent < len(data) {
		if err := r.Send(a, 4, data[sent:]); err != nil {
			t.Fatal(err)
		}
		var res int32
		pollUntil(t, r, "send completion", func(ev Event) bool {
			if ev.Token == 4 && ev.Op == OpSend {
				res = ev.Res
				return true
			}
			return false
		})
		if res <= 0 {
			t.Fatalf("send: %s", errnoName(res))
		}
		sent += int(res)
	}
	<-readDone
	if !bytes.Equal(got, data) {
		t.Fatalf("received %d bytes that differ from the %d sent", len(got), len(data))
	}
	// MSG_NOSIGNAL: sending to a closed peer is EPIPE, not a SIGPIPE.
	c, d := socketpair(t)
	closeFd(t, d)
	r.Send(c, 5, []byte("x"))
	pollUntil(t, r, "EPIPE", func(ev Event) bool {
		if ev.Token == 5 && ev.Res != -int32(unix.EPIPE) {
			t.Fatalf("send to a closed peer: %s", errnoName(ev.Res))
		}
		return ev.Token == 5
	})
	closeFd(t, c)
	// An empty send completes with 0.
	r.Send(a, 6, nil)
	pollUntil(t, r, "empty send", func(ev Event) bool { return ev.Token == 6 && ev.Res == 0 })
}

func TestUringCancelPendingRecvAndSend(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 8})
	requireFeature(t, r, ProvidedBuffers, "provided-buffer rings")
	a, b := socketpair(t)
	defer closeFd(t, a)
	defer closeFd(t, b)
	// A receive with nothing to read, and a send into a full socket, both pending.
	for {
		if _, err := unix.Write(a, make([]byte, 1<<16)); err == unix.EAGAIN {
			break
		}
	}
	big := make([]byte, 1<<20)
	r.Recv(a, 10)
	r.Send(a, 10, big)
	r.Recv(b, 11) // another token: must not be cancelled
	r.Flush()
	if err := r.Cancel(10); err != nil {
		t.Fatal(err)
	}
	r.Cancel(10) // twice: harmless
	r.Cancel(12345)
	seen := map[Op]int32{}
	pollUntil(t, r, "both cancellations", func(ev Event) bool {
		if ev.Token == 11 {
			if ev.Buf >= 0 {
				r.Release(ev.Buf)
			}
			return false
		}
		if ev.Token == 10 {
			seen[ev.Op] = ev.Res
		}
		return len(seen) == 2
	})
	if seen[OpRecv] != -int32(unix.ECANCELED) {
		t.Errorf("cancelled recv: %s", errnoName(seen[OpRecv]))
	}
	// The send may have moved some bytes before the cancellation caught it.
	if seen[OpSend] != -int32(unix.ECANCELED) && seen[OpSend] <= 0 {
		t.Errorf("cancelled send: %s", errnoName(seen[OpSend]))
	}
	r.mu.Lock()
	_, stillLinked := r.byToken[10]
	r.mu.Unlock()
	if stillLinked {
		t.Errorf("token 10 still has operations after their completions")
	}
}

// TestUringRingWrap pushes many more operations than the rings have entries, from
// several goroutines and in random batch sizes, so that the SQ and CQ indices wrap many
// times and the backlog is used; every operation must complete exactly once.
func TestUringRingWrap(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 2, Buffers: 4, BufferSize: 32})
	const senders, perSender = 4, 500
	type pair struct{ a, b int }
	pairs := make([]pair, senders)
	for i := range pairs {
		pairs[i].a, pairs[i].b = socketpair(t)
		defer closeFd(t, pairs[i].a)
		defer closeFd(t, pairs[i].b)
	}
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(s), 1))
			for i := 0; i < perSender; {
				batch := 1 + rng.IntN(20)
				for j := 0; j < batch && i < perSender; j++ {
					tok := uint64(s)<<32 | uint64(i)
					if err := r.Send(pairs[s].a, tok, []byte{byte(i)}); err != nil {
						t.Error(err)
						return
					}
					i++
				}
				if rng.IntN(3) == 0 {
					r.Flush()
				}
			}
		}()
	}
	seen := make(map[uint64]int)
	evs := make([]Event, 1+rand.IntN(7))
	deadline := time.Now().Add(60 * time.Second)
	sendersDone := make(chan struct{})
	go func() { wg.Wait(); close(sendersDone) }()
	for len(seen) < senders*perSender {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d sends completed", len(seen), senders*perSender)
		}
		n, err := r.Poll(evs, 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs[:n] {
			if ev.Op != OpSend || ev.Res != 1 {
				t.Fatalf("unexpected completion %+v (%s)", ev, errnoName(ev.Res))
			}
			seen[ev.Token]++
			if seen[ev.Token] > 1 {
				t.Fatalf("token %#x completed twice", ev.Token)
			}
		}
		// Drain the receivers so that sends never block.
		for _, p := range pairs {
			buf := make([]byte, 4096)
			unix.Read(p.b, buf)
		}
	}
	<-sendersDone
	r.mu.Lock()
	head := *r.sqHead
	r.mu.Unlock()
	if head < 4*r.sqEntries {
		t.Errorf("SQ head %d: the ring of %d entries did not wrap", head, r.sqEntries)
	}
}

func TestUringCloseWithOperationsInFlight(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	p, err := NewIOUringConfig(IOUringConfig{Entries: 4})
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	r := p.(*ioUring)
	lfd, port := loopbackListener(t)
	defer closeFd(t, lfd)
	a, b := socketpair(t)
	defer closeFd(t, b)
	for {
		if _, err := unix.Write(a, make([]byte, 1<<16)); err == unix.EAGAIN {
			break
		}
	}
	if err := r.Accept(lfd, 1); err != nil {
		t.Fatal(err)
	}
	r.Recv(a, 2)
	r.Send(a, 3, make([]byte, 1<<20))
	r.Register(a, 4, Read|Write)
	r.Flush()
	// A connection accepted while closing is closed by Close, not leaked.
	c := dialLoopback(t, port)
	defer closeFd(t, c)
	for i := range 20 { // more than the SQ ring holds: some stay in the backlog
		r.Send(a, uint64(100+i), []byte("queued"))
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// The socket is no longer held by a poll: closing it now closes it for real.
	closeFd(t, a)
	unix.SetNonblock(b, false)
	buf := make([]byte, 1<<16)
	for {
		n, err := unix.Read(b, buf)
		if n == 0 || err == unix.ECONNRESET {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// After Close: errors, not crashes.
	for name, err := range map[string]error{
		"Register": r.Register(b, 1, Read),
		"Accept":   r.Accept(lfd, 1),
		"Recv":     r.Recv(b, 1),
		"Send":     r.Send(b, 1, []byte("x")),
		"Cancel":   r.Cancel(1),
		"Flush":    r.Flush(),
		"Wake":     r.Wake(),
	} {
		if err == nil {
			t.Errorf("%s after Close succeeded", name)
		}
	}
	if _, err := r.Poll(make([]Event, 1), 0); err == nil {
		t.Errorf("Poll after Close succeeded")
	}
	if buf := r.Buffer(0, 1); buf != nil {
		t.Errorf("Buffer after Close = %v, want nil", buf)
	}
	r.Release(0) // ignored
}

func ExampleNewIOUring() {
	p, err := NewIOUring(64)
	if err != nil {
		fmt.Println("no io_uring:", errors.Is(err, ErrUnsupported))
		return
	}
	defer p.Close()
	fds, _ := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	p.Register(fds[0], 42, Read)
	unix.Write(fds[1], []byte("ping"))
	events := make([]Event, 8)
	for {
		n, _ := p.Poll(events, time.Second)
		if n > 0 {
			fmt.Println(events[0].Token, events[0].Ready&Readable != 0)
			break
		}
	}
	p.Deregister(fds[0], 42)
	// On a kernel with io_uring this prints 42 true; the output is not
	// checked, since kernels that refuse io_uring print something else.
}

// The paths of a kernel without multishot accept and buffer rings (5.13 to 5.18):
// one connection per Accept, Recv refused with ErrUnsupported.
func TestUringWithoutOptionalFeatures(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	uringTestHideFeatures = MultishotAccept | ProvidedBuffers
	defer func() { uringTestHideFeatures = 0 }()
	r := newTestUring(t, IOUringConfig{Entries: 4})
	if f := r.Features(); f&(MultishotAccept|ProvidedBuffers) != 0 || f&MultishotPoll == 0 {
		t.Fatalf("Features() = %b", f)
	}
	a, b := socketpair(t)
	defer closeFd(t, a)
	defer closeFd(t, b)
	if err := r.Recv(a, 1); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Recv without buffer rings = %v, want ErrUnsupported", err)
	}
	for _, f := range []func(){func() { r.Buffer(0, 0) }, func() { r.Release(0) }} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Buffer/Release without buffer rings did not panic")
				}
			}()
			f()
		}()
	}
	lfd, port := loopbackListener(t)
	defer closeFd(t, lfd)
	const conns = 5
	for range conns {
		c := dialLoopback(t, port)
		defer closeFd(t, c)
	}
	for i := range conns {
		if err := r.Accept(lfd, 2); err != nil {
			t.Fatal(err)
		}
		pollUntil(t, r, fmt.Sprintf("accept %d", i), func(ev Event) bool {
			if ev.Token != 2 {
				return false
			}
			if ev.Res < 0 || ev.More {
				t.Fatalf("one-shot accept: %+v (%s)", ev, errnoName(ev.Res))
			}
			unix.Close(int(ev.Res))
			return true
		})
	}
}
