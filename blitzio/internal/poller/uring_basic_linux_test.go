//go:build linux

package poller

import (
	"errors"
	"math"
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestUringABISizes(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"io_uring_sqe", unsafe.Sizeof(uringSQE{}), uringSizeofSQE},
		{"io_uring_cqe", unsafe.Sizeof(uringCQE{}), uringSizeofCQE},
		{"io_uring_params", unsafe.Sizeof(uringParams{}), uringSizeofParams},
		{"io_uring_getevents_arg", unsafe.Sizeof(uringGeteventsArg{}), uringSizeofGeteventsArg},
		{"io_uring_probe (256 ops)", unsafe.Sizeof(uringProbe{}), uringSizeofProbe},
		{"io_uring_buf_reg", unsafe.Sizeof(uringBufReg{}), uringSizeofBufReg},
		{"io_uring_buf", unsafe.Sizeof(uringBuf{}), uringSizeofBuf},
		{"__kernel_timespec", unsafe.Sizeof(uringTimespec{}), 16},
	} {
		if c.got != c.want {
			t.Errorf("sizeof(%s) = %d, want %d", c.name, c.got, c.want)
		}
	}
	// Field offsets the kernel reads by position.
	var sqe uringSQE
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"sqe.fd", unsafe.Offsetof(sqe.fd), 4},
		{"sqe.off", unsafe.Offsetof(sqe.off), 8},
		{"sqe.addr", unsafe.Offsetof(sqe.addr), 16},
		{"sqe.len", unsafe.Offsetof(sqe.len), 24},
		{"sqe.op_flags", unsafe.Offsetof(sqe.opFlags), 28},
		{"sqe.user_data", unsafe.Offsetof(sqe.userData), 32},
		{"sqe.buf_index", unsafe.Offsetof(sqe.bufIndex), 40},
		{"sqe.file_index", unsafe.Offsetof(sqe.fileIndex), 44},
		{"sqe.addr3", unsafe.Offsetof(sqe.addr3), 48},
		{"params.sq_off", unsafe.Offsetof(uringParams{}.sqOff), 40},
		{"params.cq_off", unsafe.Offsetof(uringParams{}.cqOff), 80},
		{"getevents_arg.ts", unsafe.Offsetof(uringGeteventsArg{}.ts), 16},
		{"buf.bid", unsafe.Offsetof(uringBuf{}.bid), uringBufRingBid0Offset},
		{"buf.resv (ring tail)", unsafe.Offsetof(uringBuf{}.resv), uringBufRingTailOffset},
	} {
		if c.got != c.want {
			t.Errorf("offsetof(%s) = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// TestUringKernelSupport logs what this machine's kernel offers (and is the quick probe
// that the other tests' skips rely on).
func TestUringKernelSupport(t *testing.T) {
	var u unix.Utsname
	unix.Uname(&u)
	release := unix.ByteSliceToString(u.Release[:])
	p, err := NewIOUring(0)
	if err != nil {
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("NewIOUring: error %v does not wrap ErrUnsupported", err)
		}
		t.Skipf("kernel %s refuses io_uring: %v", release, err)
	}
	defer p.Close()
	r := p.(*ioUring)
	t.Logf("kernel %s: io_uring features %#x, SQ %d entries, CQ %d entries, Features: multishot accept %v, multishot poll %v, provided buffers %v",
		release, r.kfeat, r.sqEntries, len(r.cqes),
		r.features&MultishotAccept != 0, r.features&MultishotPoll != 0, r.features&ProvidedBuffers != 0)
	if r.Name() != "io_uring" {
		t.Errorf("Name() = %q", r.Name())
	}
	if _, ok := p.(Completer); !ok {
		t.Errorf("the io_uring Poller does not implement Completer")
	}
}

func TestUringForcedRefusal(t *testing.T) {
	for _, v := range []string{"off", "0", "false", "OFF"} {
		t.Setenv(uringDisableEnv, v)
		p, err := NewIOUring(8)
		if err == nil {
			p.Close()
			t.Fatalf("%s=%s: NewIOUring succeeded", uringDisableEnv, v)
		}
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("%s=%s: error %v does not wrap ErrUnsupported", uringDisableEnv, v, err)
		}
	}
	t.Setenv(uringDisableEnv, "on")
	if p, err := NewIOUring(8); err == nil {
		p.Close()
	} else if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("%s=on: %v", uringDisableEnv, err)
	}
}

func TestUringRefusedErrorSaysWhy(t *testing.T) {
	for _, c := range []struct {
		errno unix.Errno
		want  string
	}{
		{unix.ENOSYS, "no io_uring"},
		{unix.ENOMEM, "RLIMIT_MEMLOCK"},
		{unix.EPERM, "io_uring"},
	} {
		err := uringRefused("io_uring_setup", c.errno)
		if !errors.Is(err, ErrUnsupported) || !errors.Is(err, c.errno) {
			t.Errorf("%v: error %v does not wrap both ErrUnsupported and the errno", c.errno, err)
		}
		var se *os.SyscallError
		if !errors.As(err, &se) {
			t.Errorf("%v: error %v has no *os.SyscallError", c.errno, err)
		}
		if !contains(err.Error(), c.want) {
			t.Errorf("%v: error %q does not say %q", c.errno, err, c.want)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestUringConfigValidation(t *testing.T) {
	if _, err := NewIOUringConfig(IOUringConfig{Buffers: 1 << 16}); err == nil || errors.Is(err, ErrUnsupported) {
		t.Errorf("Buffers = 65536: err = %v, want a configuration error", err)
	}
	if _, err := NewIOUringConfig(IOUringConfig{BufferSize: -1}); err == nil || errors.Is(err, ErrUnsupported) {
		t.Errorf("BufferSize = -1: err = %v, want a configuration error", err)
	}
	if _, err := NewIOUringConfig(IOUringConfig{Buffers: 1024, BufferSize: 1 << 30}); err == nil || errors.Is(err, ErrUnsupported) {
		t.Errorf("1024 buffers of 1 GiB: err = %v, want a configuration error", err)
	}
	// Entries beyond the kernel's maximum are clamped, not refused.
	r := newTestUring(t, IOUringConfig{Entries: 1 << 20, Buffers: 3, BufferSize: 100})
	if r.sqEntries > uringMaxEntries {
		t.Errorf("SQ entries %d, more than %d", r.sqEntries, uringMaxEntries)
	}
	if r.bufs != nil && r.bufs.entries != 4 {
		t.Errorf("Buffers: 3 gave %d buffers, want 4 (the next power of two)", r.bufs.entries)
	}
}

func TestUringPollTimeoutAndEmpty(t *testing.T) {
	defer watchdog(t, 30*time.Second)()
	r := newTestUring(t, IOUringConfig{Entries: 8})
	if _, err := r.Poll(nil, 0); err == nil {
		t.Errorf("Poll(nil) succeeded")
	}
	evs := make([]Event, 8)
	n, err := r.Poll(evs, 0)
	if n != 0 || err != nil {
		t.Errorf("Poll(0) on an idle ring = %d, %v", n, err)
	}
	// A timed Poll returns with nothing; that it waited is not asserted (timing).
	n, err = r.Poll(evs, 5*time.Millisecond)
	if n != 0 || err != nil {
		t.Errorf("Poll(5ms) on an idle ring = %d, %v", n, err)
	}
	// Extreme timeouts: the longest one (a deadline beyond the clock's range) and a
	// negative one other than -1 both wait until woken.
	for _, d := range []time.Duration{math.MaxInt64, math.MinInt64} {
		go func() {
			time.Sleep(time.Millisecond)
			r.Wake()
		}()
		if n, err := r.Poll(evs, d); n != 0 || err != nil {
			t.Errorf("Poll(%v) woken = %d, %v", d, n, err)
		}
	}
}

// A bad IOUringConfig is reported as such when io_uring is switched off by the
// environment too (the switch used to hide the caller's bug behind ErrUnsupported, and
// TestUringConfigValidation failed under BLITZIO_IOURING=off).
func TestUringConfigValidationWhenDisabled(t *testing.T) {
	t.Setenv(uringDisableEnv, "off")
	if _, err := NewIOUringConfig(IOUringConfig{BufferSize: -1}); err == nil || errors.Is(err, ErrUnsupported) {
		t.Errorf("BufferSize = -1 with %s=off: err = %v, want a configuration error", uringDisableEnv, err)
	}
	if _, err := NewIOUringConfig(IOUringConfig{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("valid config with %s=off: err = %v, want ErrUnsupported", uringDisableEnv, err)
	}
}
