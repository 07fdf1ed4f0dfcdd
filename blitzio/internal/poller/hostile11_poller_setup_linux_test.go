//go:build linux

package poller

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The io_uring constructor's fallbacks and refusals (setup flags, features, probe,
// buffer ring, wake poll, descriptors), the small helpers around them, and the argument
// checks of the operations. Each refusal must close what was set up so far.

// hostile11OpenFds counts this process's open descriptors.
func hostile11OpenFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents) - 1 // the directory's own descriptor
}

// hostile11NewUringFails runs NewIOUringConfig expecting an error, and checks that it
// left no descriptor open.
func hostile11NewUringFails(t *testing.T, cfg IOUringConfig) error {
	t.Helper()
	before := hostile11OpenFds(t)
	p, err := NewIOUringConfig(cfg)
	if err == nil {
		p.Close()
		t.Fatal("NewIOUringConfig succeeded")
	}
	hostile11GC()
	if after := hostile11OpenFds(t); after != before {
		t.Errorf("%d descriptors open after the failed NewIOUringConfig, %d before: %v", after, before, err)
	}
	return err
}

// hostile11Readiness checks that r reports a socket's readiness.
func hostile11Readiness(t *testing.T, r *ioUring) {
	t.Helper()
	a, b := socketpairCleanup(t)
	if err := r.Register(a, 42, Read); err != nil {
		t.Fatal(err)
	}
	unix.Write(b, []byte("x"))
	pollUntil(t, r, "readiness", func(ev Event) bool { return ev.Token == 42 && ev.Ready&Readable != 0 })
	if err := r.Deregister(a, 42); err != nil {
		t.Fatal(err)
	}
}

// Setup flags the kernel does not know (EINVAL) are dropped, newest first, down to none;
// the ring works with whatever was accepted, and records what that was.
func TestHostile11UringSetupFlagFallback(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, c := range []struct {
		name   string
		refuse uint32 // setup fails with EINVAL when flags has any of these
		want   uint32 // flags the ring ends up with (within the ones tried)
	}{
		{"no-coop-taskrun", uringSetupCoopTask, uringSetupCQSize | uringSetupClamp | uringSetupSubmitAll},
		{"no-submit-all", uringSetupSubmitAll, uringSetupCQSize | uringSetupClamp},
		{"no-flags", uringSetupCQSize | uringSetupClamp | uringSetupSubmitAll | uringSetupCoopTask, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tried []uint32
			uringTestSetup = func(entries uint32, p *uringParams) (int, unix.Errno) {
				tried = append(tried, p.flags)
				if p.flags&c.refuse != 0 {
					return -1, unix.EINVAL
				}
				return uringSetupSys(entries, p)
			}
			r := newTestUring(t, IOUringConfig{Entries: 8})
			uringTestSetup = nil
			const all = uringSetupCQSize | uringSetupClamp | uringSetupSubmitAll | uringSetupCoopTask
			if got := r.flags & all; got != c.want {
				t.Errorf("ring flags %#x, want %#x (tried %#x)", got, c.want, tried)
			}
			if last := tried[len(tried)-1]; last&c.refuse != 0 {
				t.Errorf("the last flags tried, %#x, include refused ones", last)
			}
			for i := 1; i < len(tried); i++ {
				if tried[i]&^tried[i-1] != 0 {
					t.Errorf("flags tried in the order %#x: a retry added a flag", tried)
				}
			}
			if c.want&uringSetupCQSize != 0 && len(r.cqes) != 4*int(r.sqEntries) {
				t.Errorf("CQ ring of %d entries for %d SQ entries, want 4 times as many", len(r.cqes), r.sqEntries)
			}
			hostile11Readiness(t, r)
		})
	}
}

// A kernel that refuses io_uring_setup: the error wraps ErrUnsupported and the errno,
// and says why; nothing is left open.
func TestHostile11UringSetupRefused(t *testing.T) {
	for _, c := range []struct {
		errno unix.Errno
		want  string
	}{
		{unix.ENOSYS, "no io_uring"},
		{unix.ENOMEM, "RLIMIT_MEMLOCK"},
		{unix.EMFILE, "file descriptors"},
		{unix.ENFILE, "file descriptors"},
		{unix.EINVAL, "refused by the kernel"},
		{unix.EPERM, "io_uring"},
		{unix.EACCES, "io_uring"},
	} {
		t.Run(unix.ErrnoName(c.errno), func(t *testing.T) {
			calls := 0
			uringTestSetup = func(uint32, *uringParams) (int, unix.Errno) {
				calls++
				return -1, c.errno
			}
			defer func() { uringTestSetup = nil }()
			err := hostile11NewUringFails(t, IOUringConfig{})
			if !errors.Is(err, ErrUnsupported) || !errors.Is(err, c.errno) {
				t.Fatalf("error %v does not wrap ErrUnsupported and %v", err, c.errno)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
			if c.errno != unix.EINVAL && calls != 1 {
				t.Errorf("io_uring_setup called %d times: only EINVAL (an unknown flag) is worth a retry", calls)
			}
			if c.errno == unix.EINVAL && calls != 4 {
				t.Errorf("io_uring_setup called %d times with EINVAL, want 4 (every flag set down to none)", calls)
			}
		})
	}
}

// Features the kernel reports at setup: without EXT_ARG or NODROP the ring is refused
// (and closed); without SINGLE_MMAP the CQ ring is mapped on its own and works.
func TestHostile11UringSetupFeatures(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, c := range []struct {
		name string
		hide uint32
	}{{"no-ext-arg", uringFeatExtArg}, {"no-nodrop", uringFeatNoDrop}} {
		t.Run(c.name, func(t *testing.T) {
			uringTestSetup = func(entries uint32, p *uringParams) (int, unix.Errno) {
				fd, errno := uringSetupSys(entries, p)
				p.features &^= c.hide
				return fd, errno
			}
			defer func() { uringTestSetup = nil }()
			err := hostile11NewUringFails(t, IOUringConfig{Entries: 4})
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "5.11") {
				t.Fatalf("error %v: want ErrUnsupported naming Linux 5.11", err)
			}
		})
	}
	t.Run("no-single-mmap", func(t *testing.T) {
		uringTestSetup = func(entries uint32, p *uringParams) (int, unix.Errno) {
			fd, errno := uringSetupSys(entries, p)
			p.features &^= uringFeatSingleMmap
			return fd, errno
		}
		r := newTestUring(t, IOUringConfig{Entries: 4})
		uringTestSetup = nil
		if r.cqMem == nil {
			t.Fatal("the CQ ring was not mapped on its own")
		}
		hostile11Readiness(t, r)
		if r.features&ProvidedBuffers != 0 {
			hostile11Workload(t, r)
		}
	})
}

// The probe: refused (ErrUnsupported, nothing left open), lacking a required opcode
// (refused with its name), lacking optional ones (the features are off and the
// operations that need them say so).
func TestHostile11UringProbe(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	probeHook := func(mutate func(pr *uringProbe)) {
		uringTestRegister = func(fd int, opcode uint32, arg unsafe.Pointer, nrArgs uint32) unix.Errno {
			errno := uringRegisterSys(fd, opcode, arg, nrArgs)
			if opcode == uringRegisterProbe && errno == 0 {
				mutate((*uringProbe)(arg))
			}
			return errno
		}
	}
	defer func() { uringTestRegister = nil }()

	uringTestRegister = func(fd int, opcode uint32, arg unsafe.Pointer, nrArgs uint32) unix.Errno {
		if opcode == uringRegisterProbe {
			return unix.EINVAL
		}
		return uringRegisterSys(fd, opcode, arg, nrArgs)
	}
	if err := hostile11NewUringFails(t, IOUringConfig{Entries: 4}); !errors.Is(err, ErrUnsupported) || !errors.Is(err, unix.EINVAL) {
		t.Errorf("refused probe: %v, want ErrUnsupported wrapping EINVAL", err)
	}

	for op, name := range map[int]string{uringOpPollAdd: "POLL_ADD", uringOpAsyncCancel: "ASYNC_CANCEL", uringOpAccept: "ACCEPT", uringOpSend: "SEND", uringOpRecv: "RECV"} {
		probeHook(func(pr *uringProbe) { pr.ops[op].flags = 0 })
		err := hostile11NewUringFails(t, IOUringConfig{Entries: 4})
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "IORING_OP_"+name) {
			t.Errorf("probe without %s: %v, want ErrUnsupported naming IORING_OP_%s", name, err, name)
		}
	}
	// An opcode beyond the kernel's last one is unsupported, whatever its flags say.
	probeHook(func(pr *uringProbe) { pr.lastOp = uringOpRecv - 1 })
	if err := hostile11NewUringFails(t, IOUringConfig{Entries: 4}); !strings.Contains(err.Error(), "IORING_OP_") {
		t.Errorf("probe ending before RECV: %v", err)
	}

	probeHook(func(pr *uringProbe) {
		pr.ops[uringOpSocket].flags = 0
		pr.ops[uringOpRead].flags = 0
	})
	r := newTestUring(t, IOUringConfig{Entries: 4})
	uringTestRegister = nil
	if f := r.Features(); f&(MultishotAccept|FileReadWrite) != 0 {
		t.Fatalf("Features() = %b with SOCKET and READ hidden by the probe", f)
	}
	name := t.TempDir() + "/f"
	if err := os.WriteFile(name, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, err := range []error{
		r.ReadAt(int(f.Fd()), 1, make([]byte, 4), 0),
		r.WriteAt(int(f.Fd()), 1, []byte("x"), 0),
	} {
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("file operation without FileReadWrite = %v, want ErrUnsupported", err)
		}
	}
	// One-shot accepts then: one event without More per submission.
	lfd, port := loopbackListener(t)
	defer closeFd(t, lfd)
	c := dialLoopback(t, port)
	defer closeFd(t, c)
	if err := r.Accept(lfd, 3); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, r, "one-shot accept", func(ev Event) bool {
		if ev.Token != 3 {
			return false
		}
		if ev.Res < 0 || ev.More {
			t.Fatalf("one-shot accept: %+v (%s)", ev, errnoName(ev.Res))
		}
		unix.Close(int(ev.Res))
		return true
	})
}

// The provided-buffer ring: a registration the kernel refuses (any errno) leaves a
// working ring without ProvidedBuffers, and its Recv, Buffer and Release say so; a
// refused unregistration at Close is reported, and the memory is unmapped anyway.
func TestHostile11UringBufRingRefused(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, errno := range []unix.Errno{unix.EINVAL, unix.ENOMEM, unix.EEXIST} {
		t.Run(unix.ErrnoName(errno), func(t *testing.T) {
			uringTestRegister = func(fd int, opcode uint32, arg unsafe.Pointer, nrArgs uint32) unix.Errno {
				if opcode == uringRegisterPbufRing {
					return errno
				}
				return uringRegisterSys(fd, opcode, arg, nrArgs)
			}
			r := newTestUring(t, IOUringConfig{Entries: 4, Buffers: 8, BufferSize: 512})
			uringTestRegister = nil
			if r.bufs != nil || r.Features()&ProvidedBuffers != 0 {
				t.Fatalf("a refused buffer ring is in use: Features() = %b", r.Features())
			}
			a, _ := socketpairCleanup(t)
			if err := r.Recv(a, 1); !errors.Is(err, ErrUnsupported) {
				t.Errorf("Recv = %v, want ErrUnsupported", err)
			}
			for what, f := range map[string]func(){"Buffer": func() { r.Buffer(0, 1) }, "Release": func() { r.Release(0) }} {
				func() {
					defer func() {
						if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), "no provided buffers") {
							t.Errorf("%s without buffer rings: panic %v, want one saying so", what, v)
						}
					}()
					f()
				}()
			}
			hostile11Readiness(t, r)
		})
	}
	// Directly, on a descriptor that is not a ring: refused, with the errno.
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	var se *os.SyscallError
	if _, err := newUringBufRing(int(null.Fd()), 4, 64); !errors.Is(err, ErrUnsupported) || !errors.As(err, &se) {
		t.Errorf("newUringBufRing(/dev/null) = %v, want ErrUnsupported wrapping the register errno", err)
	}

	t.Run("unregister-refused", func(t *testing.T) {
		p, err := NewIOUringConfig(IOUringConfig{Entries: 4, Buffers: 4, BufferSize: 256})
		if err != nil {
			t.Skipf("io_uring unavailable here: %v", err)
		}
		r := p.(*ioUring)
		if r.bufs == nil {
			p.Close()
			t.Skip("kernel lacks buffer rings")
		}
		uringTestRegister = func(fd int, opcode uint32, arg unsafe.Pointer, nrArgs uint32) unix.Errno {
			if opcode == uringUnregisterPbufRing {
				return unix.EINVAL
			}
			return uringRegisterSys(fd, opcode, arg, nrArgs)
		}
		defer func() { uringTestRegister = nil }()
		err = r.Close()
		if err == nil || !strings.Contains(err.Error(), "UNREGISTER_PBUF_RING") {
			t.Errorf("Close with a refused unregistration = %v, want that error", err)
		}
		if r.bufs.bufMem != nil || r.bufs.ringMem != nil {
			t.Errorf("buffers left mapped after Close")
		}
		if err2 := r.Close(); err2 != err {
			t.Errorf("second Close = %v, want the first's %v", err2, err)
		}
	})
}

// The wake poll at setup: a kernel that fails a multishot POLL_ADD with EINVAL is refused
// as lacking multishot poll, another failure is reported as such, and an eventfd that
// cannot be created fails the constructor; nothing is left open. The failures are made
// real by rewriting the wake poll's SQE (through a second mapping of the SQE array)
// before the kernel reads it.
func TestHostile11UringStartWakeFailures(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, c := range []struct {
		name   string
		mutate func(sqe *uringSQE)
		want   string
		unsupp bool
	}{
		{"no-multishot-poll", func(sqe *uringSQE) { sqe.len = 1 << 30 }, "multishot poll", true},
		{"bad-fd", func(sqe *uringSQE) { sqe.fd = -1 }, "arming the wake poll", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := false
			uringTestEnter = func(fd int, sub, min, flags uint32, arg unsafe.Pointer, sz uintptr) (int, unix.Errno) {
				if !done && sub > 0 {
					done = true
					mem, err := unix.Mmap(fd, uringOffSQEs, uringSizeofSQE, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
					if err != nil {
						t.Errorf("mmap of the SQEs: %v", err)
					} else {
						sqe := (*uringSQE)(unsafe.Pointer(&mem[0]))
						if sqe.opcode != uringOpPollAdd {
							t.Errorf("first SQE has opcode %d, want POLL_ADD", sqe.opcode)
						}
						c.mutate(sqe)
						unix.Munmap(mem)
					}
				}
				return uringEnterSys(fd, sub, min, flags, arg, sz)
			}
			defer func() { uringTestEnter = nil }()
			err := hostile11NewUringFails(t, IOUringConfig{Entries: 4})
			if !done {
				t.Fatal("no submission at setup: this test did not test the failure")
			}
			if !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrUnsupported) != c.unsupp {
				t.Fatalf("error %v: want %q, ErrUnsupported %v", err, c.want, c.unsupp)
			}
		})
	}
	t.Run("out-of-descriptors", func(t *testing.T) {
		hostile11WithFdBudget(t, 0, func() {
			_, err := NewIOUringConfig(IOUringConfig{Entries: 4})
			if !errors.Is(err, ErrUnsupported) || !errors.Is(err, unix.EMFILE) {
				t.Fatalf("NewIOUringConfig without a descriptor = %v, want ErrUnsupported wrapping EMFILE", err)
			}
		})
		hostile11WithFdBudget(t, 1, func() {
			_, err := NewIOUringConfig(IOUringConfig{Entries: 4})
			var se *os.SyscallError
			if !errors.Is(err, unix.EMFILE) || !errors.As(err, &se) || se.Syscall != "eventfd" {
				t.Fatalf("NewIOUringConfig with one descriptor = %v, want eventfd's EMFILE", err)
			}
			if got := hostile11FreeFds(t); got != 1 {
				t.Fatalf("%d descriptors free after the failure, want 1 (the ring leaked)", got)
			}
		})
	})
}

// BLITZIO_IOURING: every spelling of "off" refuses io_uring (ErrUnsupported naming the
// variable), anything else leaves it on.
func TestHostile11UringDisableEnv(t *testing.T) {
	for _, v := range []string{"no", "disable", "Disabled", " off ", "FALSE"} {
		t.Setenv(uringDisableEnv, v)
		p, err := NewIOUring(4)
		if err == nil {
			p.Close()
			t.Fatalf("%s=%q: io_uring not refused", uringDisableEnv, v)
		}
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), uringDisableEnv) {
			t.Fatalf("%s=%q: %v, want ErrUnsupported naming the variable", uringDisableEnv, v, err)
		}
	}
	for _, v := range []string{"", "1", "yes", "offline"} {
		t.Setenv(uringDisableEnv, v)
		p, err := NewIOUring(4)
		if err != nil && strings.Contains(err.Error(), uringDisableEnv) {
			t.Fatalf("%s=%q refused io_uring: %v", uringDisableEnv, v, err)
		}
		if err == nil {
			p.Close()
		}
	}
}

func TestHostile11UringErrnoAndRefused(t *testing.T) {
	if got := uringErrno(fmt.Errorf("wrapped: %w", unix.ENOMEM)); got != unix.ENOMEM {
		t.Errorf("uringErrno(wrapped ENOMEM) = %v", got)
	}
	if got := uringErrno(errors.New("not an errno")); got != unix.EINVAL {
		t.Errorf("uringErrno(plain error) = %v, want EINVAL", got)
	}
	// EPERM and EACCES say why, from kernel.io_uring_disabled when it can be read.
	b, rerr := os.ReadFile("/proc/sys/kernel/io_uring_disabled")
	for _, errno := range []unix.Errno{unix.EPERM, unix.EACCES} {
		msg := uringRefused("io_uring_setup", errno).Error()
		want := "io_uring is forbidden here"
		if rerr == nil {
			switch strings.TrimSpace(string(b)) {
			case "2":
				want = "io_uring_disabled=2"
			case "1":
				want = "io_uring_group"
			default:
				want = "seccomp"
			}
		}
		if !strings.Contains(msg, want) {
			t.Errorf("%v: %q does not say %q", errno, msg, want)
		}
	}
}

// On a big-endian machine the kernel reads poll32_events with its halves swapped.
func TestHostile11UringPollEventsByteOrder(t *testing.T) {
	mask := uint32(unix.POLLIN | unix.POLLRDHUP)
	old := bigEndian
	defer func() { bigEndian = old }()
	bigEndian = false
	if got := uringPollEvents(mask); got != mask {
		t.Errorf("little-endian: %#x, want %#x", got, mask)
	}
	bigEndian = true
	if got := uringPollEvents(mask); got != mask<<16|mask>>16 {
		t.Errorf("big-endian: %#x, want the halves of %#x swapped", got, mask)
	}
}

// The operations' argument checks: descriptors out of range, offsets below -1, and
// lengths beyond 1 GiB (clamped, not refused: the Event says how much was done).
func TestHostile11UringOpArguments(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 8})
	needFileRW(t, r)
	for name, err := range map[string]error{
		"ReadAt(-1)":        r.ReadAt(-1, 1, make([]byte, 1), 0),
		"WriteAt(1<<31)":    r.WriteAt(1<<31, 1, []byte("x"), 0),
		"ReadAt(off=-2)":    r.ReadAt(0, 1, make([]byte, 1), -2),
		"Send(-1)":          r.Send(-1, 1, []byte("x")),
		"Accept(1<<40)":     r.Accept(1<<40, 1),
		"Register(1<<40)":   r.Register(1<<40, 1, Read),
		"Recv(-5)":          r.Recv(-5, 1),
		"WriteAt(off=-100)": r.WriteAt(0, 1, []byte("x"), -100),
	} {
		if err == nil {
			t.Errorf("%s succeeded", name)
		} else if !errors.Is(err, unix.EBADF) && !errors.Is(err, unix.EINVAL) {
			t.Errorf("%s = %v, want EBADF or EINVAL", name, err)
		}
	}
	// A write of more than 1 GiB, from memory the kernel never needs to touch
	// (/dev/null discards it), is clamped to 1 GiB.
	const huge = 1<<30 + 4096
	mem, err := unix.Mmap(-1, 0, huge, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		t.Skipf("mmap of 1 GiB: %v", err)
	}
	defer unix.Munmap(mem)
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if err := r.WriteAt(int(null.Fd()), 7, mem, -1); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, r, "a 1 GiB write", func(ev Event) bool {
		if ev.Token != 7 {
			return false
		}
		if ev.Op != OpWrite || ev.Res != 1<<30 {
			t.Fatalf("write of %d bytes: %+v, want 1 GiB written", huge, ev)
		}
		return true
	})
	// Send clamps the same way: the queued SQE asks for 1 GiB.
	a, _ := socketpairCleanup(t)
	r.mu.Lock()
	pos := r.sqLocal
	r.mu.Unlock()
	if err := r.Send(a, 8, mem); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	var sqe uringSQE
	if len(r.backlog) > 0 {
		sqe = r.backlog[len(r.backlog)-1]
	} else {
		sqe = r.sqes[pos&r.sqMask]
	}
	r.mu.Unlock()
	if sqe.opcode != uringOpSend || sqe.len != 1<<30 {
		t.Fatalf("queued send: opcode %d len %d, want SEND of 1 GiB", sqe.opcode, sqe.len)
	}
	if err := r.Cancel(8); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, r, "the cancelled send", func(ev Event) bool { return ev.Token == 8 })
}
