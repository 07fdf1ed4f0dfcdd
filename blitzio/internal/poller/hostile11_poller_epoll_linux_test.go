//go:build linux

package poller

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hostile11FdOpen reports whether fd is an open descriptor.
func hostile11FdOpen(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil
}

// hostile11TakeFdNumber makes src's file also appear at descriptor number want, which
// must be free, by duplicating src until dup hands out want (it returns the lowest free
// number); the other duplicates are closed. It reports false if want was not reached.
// src must have been opened before want was freed, or it may sit at want itself.
func hostile11TakeFdNumber(t *testing.T, src, want int) bool {
	t.Helper()
	var extra []int
	defer func() {
		for _, fd := range extra {
			unix.Close(fd)
		}
	}()
	for range 4096 {
		fd, err := unix.Dup(src)
		if err != nil {
			t.Fatalf("dup: %v", err)
		}
		if fd == want {
			t.Cleanup(func() { unix.Close(fd) })
			return true
		}
		extra = append(extra, fd)
		if fd > want {
			return false
		}
	}
	return false
}

// hostile11GC runs collections and finalizers a few times.
func hostile11GC() {
	for range 3 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond) // the finalizer goroutine runs meanwhile
	}
}

// Regression: when Go's netpoller refuses a descriptor, attach let go of the os.File
// it had made to find out, after clearing the finalizer of the wrong object
// (runtime.SetFinalizer on the *os.File, while os puts the cleanup on the File's inner
// object): the next garbage collection closed the descriptor under the poller, or
// whatever file had reused its number.
func TestHostile11NetpollAttachRefusedKeepsFd(t *testing.T) {
	name := t.TempDir() + "/regular"
	if err := os.WriteFile(name, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var n netpollFD
	if n.attach(fd, "regular") {
		t.Fatal("Go's netpoller accepted a regular file: this test needs a refused descriptor")
	}
	if n.attached() {
		t.Fatal("attached() after a refused attach")
	}
	hostile11GC()
	if !hostile11FdOpen(fd) {
		t.Fatalf("fd %d was closed by a garbage collection after a refused attach", fd)
	}
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Errorf("after a refused attach: F_GETFL = %#x, %v; want the descriptor back in blocking mode", fl, err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := n.closeUnattached(fd); err != nil {
		t.Fatalf("closeUnattached: %v", err)
	}
	if hostile11FdOpen(fd) {
		t.Fatalf("fd %d still open after closeUnattached", fd)
	}
	// The number may now be reused: nothing of the old File may close it.
	if !hostile11TakeFdNumber(t, int(w.Fd()), fd) {
		t.Skipf("could not place a file at descriptor %d", fd)
	}
	hostile11GC()
	if !hostile11FdOpen(fd) {
		t.Fatalf("a reused descriptor %d was closed by the refused attach's File", fd)
	}
	// attach on a descriptor that is not open fails cleanly.
	var bad netpollFD
	if bad.attach(-1, "bad") || bad.attached() {
		t.Fatal("attach(-1) succeeded")
	}
	if err := bad.closeUnattached(-1); err == nil {
		t.Fatal("closeUnattached(-1) succeeded")
	}
}

// Regression: Wake after Close (which the runtime can do: a spawn racing shutdown wakes
// the worker it saw polling) wrote 8 bytes to the closed eventfd's number, which may
// name another file by then.
func TestHostile11EpollWakeAfterCloseWritesNothing(t *testing.T) {
	epollModes(t, func(t *testing.T, p *epoll) {
		evfd := p.evfd
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if !hostile11TakeFdNumber(t, int(w.Fd()), evfd) {
			t.Skipf("could not place a pipe at the eventfd's old number %d", evfd)
		}
		werr := p.Wake()
		if werr == nil {
			t.Errorf("Wake after Close succeeded")
		} else if !errors.Is(werr, os.ErrClosed) {
			t.Errorf("Wake after Close = %v, want an error wrapping os.ErrClosed", werr)
		}
		rfd := int(r.Fd()) // Fd puts the pipe in blocking mode: once
		if err := unix.SetNonblock(rfd, true); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		if k, _ := unix.Read(rfd, buf); k > 0 {
			t.Fatalf("Wake after Close wrote %d bytes into the file that reused the eventfd's number", k)
		}
	})
}

// Regression: Register and Deregister after Close ran epoll_ctl on the closed epoll
// descriptor's number: when another poller had reused it (a new runtime), the stale
// one added fds to (or removed them from) the other's interest list, whose Poll then
// reported tokens it never handed out, or lost its own registrations.
func TestHostile11EpollRegisterAfterCloseStaysAway(t *testing.T) {
	p1 := newEpoll(t).(*epoll)
	old := p1.epfd
	if err := p1.Close(); err != nil {
		t.Fatal(err)
	}
	p2 := newEpoll(t).(*epoll)
	if p2.epfd != old && !hostile11TakeFdNumber(t, p2.epfd, old) {
		t.Skipf("could not place the second epoll at the first's old number %d", old)
	}
	a, b := socketpairCleanup(t)
	c, d := socketpairCleanup(t)
	if err := p2.Register(c, 22, Read); err != nil {
		t.Fatal(err)
	}
	if err := p1.Register(a, 11, Read); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Register after Close = %v, want an error wrapping os.ErrClosed", err)
	}
	if err := p1.Deregister(c, 22); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Deregister after Close = %v, want an error wrapping os.ErrClosed", err)
	}
	if _, err := p1.Poll(make([]Event, 4), 0); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Poll after Close = %v, want an error wrapping os.ErrClosed", err)
	}
	unix.Write(b, []byte("x"))
	unix.Write(d, []byte("x"))
	evs := make([]Event, 8)
	seen22 := false
	deadline := time.Now().Add(10 * time.Second)
	for !seen22 {
		if time.Now().After(deadline) {
			t.Fatal("the second poller lost its registration (removed through the first's stale descriptor)")
		}
		k, err := p2.Poll(evs, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs[:k] {
			switch ev.Token {
			case 22:
				seen22 = true
			default:
				t.Fatalf("the second poller reported token %#x, registered through the closed first poller", ev.Token)
			}
		}
	}
	// Anything registered through the stale descriptor would be reported by now.
	if k, _ := p2.Poll(evs, 20*time.Millisecond); k > 0 {
		t.Fatalf("the second poller reported %+v", evs[:k])
	}
}

// Close while a Poll waits on Go's netpoller: the Poll returns (an error wrapping
// os.ErrClosed, or nothing) instead of sleeping for ever, and Close does not wait for it.
func TestHostile11EpollCloseWhilePollParked(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for range 5 {
		p, err := NewEpoll()
		if err != nil {
			t.Fatal(err)
		}
		if !p.(*epoll).np.attached() {
			p.Close()
			t.Skip("the runtime refused the epoll descriptor")
		}
		done := make(chan error, 1)
		go func() {
			_, err := p.Poll(make([]Event, 4), -1)
			done <- err
		}()
		time.Sleep(2 * time.Millisecond) // most often parked by now; either order must work
		if err := p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, os.ErrClosed) {
				t.Fatalf("Poll under Close = %v, want nil or an error wrapping os.ErrClosed", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a Poll parked on the netpoller did not return after Close")
		}
	}
}

// Wake, Register and Deregister racing Close from several goroutines: every call
// either works or reports os.ErrClosed, and the race detector sees no unsynchronised
// access. A Poll running until Close (netpoll mode) returns.
func TestHostile11EpollCallsRaceClose(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for round := range 30 {
		p, err := NewEpoll()
		if err != nil {
			t.Fatal(err)
		}
		a, b := socketpair(t)
		var wg sync.WaitGroup
		var bad atomic.Value
		start := make(chan struct{})
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := range 100 {
					var err error
					switch {
					case g == 0 && i%2 == 0:
						err = p.Register(a, uint64(1+i), Read)
						if err != nil && errors.Is(err, unix.EEXIST) {
							err = nil
						}
					case g == 0:
						err = p.Deregister(a, uint64(i))
						if err != nil && errors.Is(err, unix.ENOENT) {
							err = nil
						}
					default:
						err = p.Wake()
					}
					if err != nil && !errors.Is(err, os.ErrClosed) {
						bad.Store(err)
					}
				}
			}()
		}
		close(start)
		if round%2 == 1 {
			runtime.Gosched()
		}
		if err := p.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		wg.Wait()
		if err := bad.Load(); err != nil {
			t.Fatalf("round %d: a call racing Close failed with %v, want nil or os.ErrClosed", round, err)
		}
		unix.Close(a)
		unix.Close(b)
	}
}

// Regression: NewEpoll handed the epoll descriptor to Go's netpoller (an os.File owning
// it) before registering its eventfd; when that registration failed, it closed the
// descriptor with a plain close, behind the File, whose cleanup closed the number again
// at a later garbage collection, whatever file had reused it by then.
func TestHostile11NewEpollCtlFailureClosesOnce(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	var epfd atomic.Int64
	epfd.Store(-1)
	epollTestCtlWake = func(fd int) error {
		epfd.Store(int64(fd))
		return unix.ENOMEM
	}
	p, err := NewEpoll()
	epollTestCtlWake = nil
	if err == nil {
		p.Close()
		t.Fatal("NewEpoll succeeded although registering its eventfd failed")
	}
	if !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("NewEpoll = %v, want the epoll_ctl error", err)
	}
	fd := int(epfd.Load())
	if fd < 0 {
		t.Fatal("the hook did not run: this test did not test the failure")
	}
	if hostile11FdOpen(fd) {
		// Not necessarily ours: the number may have been reused already.
		t.Logf("fd %d open again after the failed NewEpoll", fd)
	} else {
		if !hostile11TakeFdNumber(t, int(w.Fd()), fd) {
			t.Skipf("could not place a file at descriptor %d", fd)
		}
		hostile11GC()
		if !hostile11FdOpen(fd) {
			t.Fatalf("descriptor %d, reused after a failed NewEpoll, was closed by a garbage collection", fd)
		}
	}
}

// NewEpoll out of descriptors: the error says which call failed and wraps EMFILE, and
// nothing is leaked (exactly the descriptors free before are free after).
func TestHostile11NewEpollOutOfDescriptors(t *testing.T) {
	hostile11WithFdBudget(t, 0, func() {
		p, err := NewEpoll()
		if err == nil {
			p.Close()
			t.Fatal("NewEpoll succeeded without a free descriptor")
		}
		var se *os.SyscallError
		if !errors.Is(err, unix.EMFILE) || !errors.As(err, &se) || se.Syscall != "epoll_create1" {
			t.Fatalf("NewEpoll = %v, want epoll_create1's EMFILE", err)
		}
	})
	hostile11WithFdBudget(t, 1, func() {
		p, err := NewEpoll()
		if err == nil {
			p.Close()
			t.Fatal("NewEpoll succeeded with one free descriptor")
		}
		var se *os.SyscallError
		if !errors.Is(err, unix.EMFILE) || !errors.As(err, &se) || se.Syscall != "eventfd" {
			t.Fatalf("NewEpoll = %v, want eventfd's EMFILE", err)
		}
		if got := hostile11FreeFds(t); got != 1 {
			t.Fatalf("%d descriptors free after the failed NewEpoll, want 1 (the epoll descriptor leaked)", got)
		}
	})
	hostile11WithFdBudget(t, 2, func() {
		p, err := NewEpoll()
		if err != nil {
			t.Fatalf("NewEpoll with two free descriptors: %v", err)
		}
		if p.Name() != "epoll" {
			t.Errorf("Name() = %q, want epoll", p.Name())
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		hostile11GC()
		if got := hostile11FreeFds(t); got != 2 {
			t.Fatalf("%d descriptors free after Close, want 2", got)
		}
	})
}

// hostile11WithFdBudget runs fn with exactly free descriptors left under
// RLIMIT_NOFILE: the limit is lowered, every free number below it filled, and free of
// them closed again. Everything is restored afterwards.
func hostile11WithFdBudget(t *testing.T, free int, fn func()) {
	t.Helper()
	// Go's netpoller must exist before the limit is lowered: it needs descriptors of
	// its own when first used.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr.SetReadDeadline(time.Now())
	pr.Close()
	pw.Close()
	null := hostile11Null(t)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	maxFd := 0
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, e := range ents {
		var n int
		for _, c := range e.Name() {
			n = n*10 + int(c-'0')
		}
		maxFd = max(maxFd, n)
	}
	limit := uint64(maxFd + 1 + free + 8)
	if limit > old.Cur {
		t.Skipf("RLIMIT_NOFILE %d too low for this test", old.Cur)
	}
	lowered := old
	lowered.Cur = limit
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	var fill []int
	defer func() {
		for _, fd := range fill {
			unix.Close(fd)
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			t.Errorf("restoring RLIMIT_NOFILE: %v", err)
		}
	}()
	for {
		fd, err := unix.Dup(null)
		if err == unix.EMFILE {
			break
		}
		if err != nil {
			t.Fatalf("dup: %v", err)
		}
		fill = append(fill, fd)
	}
	if len(fill) < free {
		t.Fatalf("only %d descriptors could be filled", len(fill))
	}
	for range free {
		unix.Close(fill[len(fill)-1])
		fill = fill[:len(fill)-1]
	}
	fn()
}

var (
	hostile11NullOnce sync.Once
	hostile11NullFd   = -1
)

// hostile11Null returns a descriptor of /dev/null kept open for the process, to be
// duplicated (standard input may be closed).
func hostile11Null(t *testing.T) int {
	t.Helper()
	hostile11NullOnce.Do(func() {
		fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			hostile11NullFd = fd
		}
	})
	if hostile11NullFd < 0 {
		t.Fatal("cannot open /dev/null")
	}
	return hostile11NullFd
}

// hostile11FreeFds counts the descriptors that can still be opened (at most 16), and
// closes them again.
func hostile11FreeFds(t *testing.T) int {
	t.Helper()
	var got []int
	for range 16 {
		fd, err := unix.Dup(hostile11Null(t))
		if err != nil {
			break
		}
		got = append(got, fd)
	}
	for _, fd := range got {
		unix.Close(fd)
	}
	return len(got)
}

// One socket registered with two pollers of different kinds (as two runtimes might):
// each reports its readiness with its own token, and deregistering from one leaves the
// other's registration in place.
func TestHostile11SameFdTwoPollers(t *testing.T) {
	ep := newEpoll(t)
	ur := newTestUring(t, IOUringConfig{Entries: 8})
	a, b := socketpairCleanup(t)
	if err := ep.Register(a, 1, Read); err != nil {
		t.Fatal(err)
	}
	if err := ur.Register(a, 2, Read); err != nil {
		t.Fatal(err)
	}
	ur.Flush()
	unix.Write(b, []byte("x"))
	if r := pollFor(t, ep, 1); r&Readable == 0 {
		t.Fatalf("epoll: %b lacks Readable", r)
	}
	pollUntil(t, ur, "io_uring readiness", func(ev Event) bool { return ev.Token == 2 && ev.Ready&Readable != 0 })
	if err := ep.Deregister(a, 1); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	unix.Read(a, buf)
	unix.Write(b, []byte("y"))
	pollUntil(t, ur, "io_uring readiness after epoll's Deregister", func(ev Event) bool { return ev.Token == 2 && ev.Ready&Readable != 0 })
	if n, _ := ep.Poll(make([]Event, 4), 20*time.Millisecond); n != 0 {
		t.Fatalf("epoll reported %d events after Deregister", n)
	}
	if err := ur.Deregister(a, 2); err != nil {
		t.Fatal(err)
	}
	if ur.Name() != "io_uring" {
		t.Errorf("Name() = %q", ur.Name())
	}
}
