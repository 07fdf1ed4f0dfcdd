//go:build linux

package poller

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// IOUringConfig sizes an io_uring Poller. The zero value asks for the defaults.
type IOUringConfig struct {
	// Entries is the submission queue size (rounded up to a power of two by the kernel,
	// at most 32768; 0 means 256). The completion queue gets four times as many.
	// Submissions beyond it are queued in Go memory and handed over as room frees, so
	// it bounds the batch per system call, not the number of operations in flight.
	Entries uint32
	// Buffers is the number of provided receive buffers (rounded up to a power of two,
	// at most 32768; 0 means 256). Recv fails its completion with -ENOBUFS while all of
	// them are held by the caller.
	Buffers uint32
	// BufferSize is the size of each provided buffer (0 means 4096).
	BufferSize int
	// OneShotReadiness makes registrations report readiness only when armed (see
	// Armer), with one one-shot poll per direction, instead of one multishot poll armed
	// for the registration's life.
	//
	// Why: the kernel posts a poll's completion from task work run by the thread that
	// submitted the poll. A multishot poll stays tied to the thread that happened to
	// register the socket; under Go's scheduler that is often a thread parked in a futex
	// by the time data arrives, which the kernel then wakes only to post the completion
	// (a context switch per readiness, that epoll does not pay). A one-shot poll is armed
	// again by the worker that has just drained the socket, on the thread it runs on, which
	// is busy when the peer's answer comes and runs the task work at its next system call.
	// In a 100-connection echo this cut context switches about sixfold. The cost is one
	// submission queue entry per wait, batched into the next io_uring_enter.
	OneShotReadiness bool
}

// uringDisableEnv names the environment variable that refuses io_uring, so that a
// deployment (or a test) can force the epoll fallback: BLITZIO_IOURING=off.
const uringDisableEnv = "BLITZIO_IOURING"

// uringTestHideFeatures makes New behave as on a kernel without these features, so
// that tests can run the paths a driver takes on older kernels. Set only by tests.
var uringTestHideFeatures Features

// uringCloseWait bounds how long Close waits for cancelled operations to complete.
// Socket operations are cancelled at once; only an operation stuck in an io-wq worker on
// a file that ignores signals could take longer, and then Close leaks its memory rather
// than freeing what the kernel may still write.
var uringCloseWait = 5 * time.Second

// NewIOUring creates an io_uring Poller (which is also a Completer) with a submission
// queue of entries (0 means 256) and the default provided buffers. See NewIOUringConfig.
func NewIOUring(entries uint32) (Poller, error) {
	return NewIOUringConfig(IOUringConfig{Entries: entries})
}

// NewIOUringConfig creates an io_uring Poller (which is also a Completer), probing the
// kernel for the optional operations (see Features).
//
// When the kernel refuses io_uring, the error wraps ErrUnsupported and the system
// call's errno, and says why: ENOSYS (no io_uring in this kernel), EPERM
// (kernel.io_uring_disabled, or a seccomp filter as in many container runtimes), ENOMEM
// (the RLIMIT_MEMLOCK limit of kernels before 5.12), or a kernel older than 5.13, which
// lacks the timed wait (5.11) or the multishot poll (5.13) this package needs. Multishot
// accept and provided-buffer receives (5.19) are optional: see Features. Setting the
// environment variable BLITZIO_IOURING=off refuses io_uring the same way, to force the
// epoll fallback.
//
// Two differences from epoll matter to a driver. Registrations and operations are
// queued and reach the kernel at the next Poll or Flush: a Poll already blocked in the
// kernel does not pick up what other goroutines queue meanwhile, so they call Flush (or
// Wake). And the kernel holds a reference to a registered fd's file until Deregister is
// submitted: Deregister before closing an fd, or the socket stays open (see Register).
//
// Setup flags: SUBMIT_ALL (keep submitting a batch past a bad entry), CQSIZE and
// COOP_TASKRUN when the kernel has them. The kernel posts the completion of a socket
// operation (here: a readiness poll) from task work run by the thread that submitted it;
// without COOP_TASKRUN it interrupts that thread with an inter-processor interrupt when
// it is running, and with it the work waits until the thread next enters or leaves the
// kernel (a system call, or at the latest an interrupt such as the scheduler tick), which
// costs less and loses nothing. A sleeping submitter is woken either way. Deliberately
// not SINGLE_ISSUER or DEFER_TASKRUN: they require every submission, and the running of
// the task work, to come from one OS thread, and Go moves goroutines between threads, so
// the goroutine calling Poll or Flush is on a different thread from one call to the next.
func NewIOUringConfig(cfg IOUringConfig) (Poller, error) {
	entries := cfg.Entries
	if entries == 0 {
		entries = uringDefaultEntries
	}
	if entries > uringMaxEntries {
		entries = uringMaxEntries
	}
	nbuf := cfg.Buffers
	if nbuf == 0 {
		nbuf = uringDefaultBufferCount
	}
	if nbuf > uringMaxBufRingEntries {
		return nil, fmt.Errorf("poller: io_uring: IOUringConfig.Buffers = %d, more than %d", cfg.Buffers, uringMaxBufRingEntries)
	}
	nbuf = 1 << bits.Len32(nbuf-1) // a buffer ring's size is a power of two
	size := cfg.BufferSize
	if size == 0 {
		size = uringDefaultBufferSize
	}
	if size < 0 || size > uringMaxBufferRegionSize/int(nbuf) {
		return nil, fmt.Errorf("poller: io_uring: IOUringConfig.BufferSize = %d with %d buffers: want 1..%d",
			cfg.BufferSize, nbuf, uringMaxBufferRegionSize/int(nbuf))
	}
	// After the checks of cfg: a bad configuration is the caller's bug, reported the
	// same whether or not io_uring is switched off here.
	if v := strings.TrimSpace(os.Getenv(uringDisableEnv)); v != "" {
		switch strings.ToLower(v) {
		case "0", "off", "false", "no", "disable", "disabled":
			return nil, fmt.Errorf("%w: io_uring disabled by %s=%s", ErrUnsupported, uringDisableEnv, v)
		}
	}
	r := &ioUring{fd: -1, wakeFd: -1, oneShot: cfg.OneShotReadiness}
	if err := r.setup(entries); err != nil {
		r.release()
		return nil, err
	}
	if err := r.probe(); err != nil {
		r.release()
		return nil, err
	}
	r.features &^= uringTestHideFeatures
	if uringTestHideFeatures&ProvidedBuffers != 0 {
		// As on a kernel without buffer rings.
	} else if br, err := newUringBufRing(r.fd, nbuf, size); err == nil {
		r.bufs = br
		r.features |= ProvidedBuffers
	} else if !errors.Is(err, ErrUnsupported) {
		r.release()
		return nil, err
	}
	if err := r.startWake(); err != nil {
		r.release()
		return nil, err
	}
	r.attachNetpoll()
	return r, nil
}

// attachNetpoll hands the ring's descriptor to Go's netpoller (see ioUring.np). It
// leaves np unattached, and a waiting Poll blocking in io_uring_enter, if the runtime
// refuses the descriptor.
func (r *ioUring) attachNetpoll() {
	if uringTestNoNetpoll {
		return
	}
	if r.np.attach(r.fd, "io_uring") {
		r.collect = r.cqPending
	}
}

// uringTestNoCoopTaskrun makes NewIOUring set the ring up without
// IORING_SETUP_COOP_TASKRUN, as on a kernel before 5.19. Set only by tests.
var uringTestNoCoopTaskrun bool

// uringTestNoNetpoll makes NewIOUring leave the ring out of Go's netpoller, so that tests
// can run the path that blocks in io_uring_enter. Set only by tests.
var uringTestNoNetpoll bool

// cqPending is the RawConn.Read callback of waitNetpoll: true (done) when completions
// are waiting in the CQ ring or in the kernel's overflow list.
func (r *ioUring) cqPending(uintptr) bool {
	return atomic.LoadUint32(r.cqHead) != atomic.LoadUint32(r.cqTail) ||
		atomic.LoadUint32(r.sqFlags)&uringSQCQOverflow != 0
}

// waitNetpoll parks the calling goroutine on Go's netpoller until the ring has
// completions or dl passes (zero: no deadline; see netpollFD.wait); it reports whether
// completions may be waiting.
func (r *ioUring) waitNetpoll(dl time.Time) (bool, error) {
	ok, err := r.np.wait(dl, r.collect)
	if err != nil {
		return false, errUringClosed // the descriptor was closed under the wait
	}
	return ok, nil
}

// ioUring is the io_uring backend.
//
// Threading: Poll runs on one goroutine at a time; every other method may be called from
// any goroutine. Submissions are written into the SQ ring (or, when it is full, a
// backlog in Go memory) under mu and handed to the kernel by the next Poll or Flush, so
// many operations cost one io_uring_enter. A Poll already blocked in the kernel does not
// see submissions made after it started: whoever submits from another goroutine calls
// Flush (or Wake, to have the Poll return and submit). Only Poll (and Close) reads the
// CQ ring.
//
// Ownership: every operation has a slot (its user_data names the slot and the slot's
// generation). The slot keeps what the kernel may touch — a Send's buffer, pinned — until
// the operation's last completion (one without IORING_CQE_F_MORE) arrives.
//
// Cost under Go's scheduler: the kernel posts a poll (readiness) completion from task
// work queued to the thread that submitted the request. Which thread submits is up to
// the Go scheduler: any M that ran a Register, Flush or Poll, often one parked in a
// futex at the time, which the kernel then wakes (seen as a futex wait interrupted with
// ERESTARTSYS under strace) to post the completion, where epoll queues the event in the
// waking context. This is why readiness through io_uring trails epoll for sockets here.
// COOP_TASKRUN (see NewIOUringConfig) spares the interrupt of a running submitter, not
// the wake-up of a sleeping one. Submitting every registration from one dedicated,
// locked thread was measured too: all task work then lands on that thread, which is
// asleep when it arrives, and echo throughput was lower than with the scheduler's
// threads.
type ioUring struct {
	fd       int
	features Features
	kfeat    uint32 // io_uring_params.features
	flags    uint32 // io_uring_params.flags the kernel accepted

	// Mappings (unmapped by release).
	ringMem []byte // SQ ring, and the CQ ring with IORING_FEAT_SINGLE_MMAP
	cqMem   []byte // the CQ ring without IORING_FEAT_SINGLE_MMAP
	sqeMem  []byte

	sqHead    *uint32 // written by the kernel
	sqTail    *uint32 // written by us under mu
	sqFlags   *uint32
	sqMask    uint32
	sqEntries uint32
	sqes      []uringSQE
	cqHead    *uint32 // written by us (Poll or Close)
	cqTail    *uint32 // written by the kernel
	cqMask    uint32
	cqes      []uringCQE

	// life guards the ring fd and the mappings against release: submit holds it
	// shared across io_uring_enter, release takes it exclusively.
	life     sync.RWMutex
	released bool

	mu      sync.Mutex
	closed  bool
	sqLocal uint32      // our copy of the SQ tail
	backlog []uringSQE  // submissions waiting for room in the SQ ring
	slots   []uringSlot // indexed by the low 32 bits of user_data
	free    []uint32
	opMems  []*uringOpMem // unused operation memory records, for reuse
	// regs maps an fd to 1 + the slot of its readiness registration (0: none), in a
	// slice indexed by the fd below uringDenseFds: descriptor numbers are small and
	// dense, so this costs 4 bytes per number where a map costs about ten times that per
	// registration (one per open socket). Larger numbers go to regsHigh.
	regs     []uint32
	regsHigh map[int]uint32
	nregs    int
	byToken  map[uint64]uint32 // token -> first op slot (Accept/Recv/Send) with it
	// inflight counts submitted-or-queued operations whose last completion has not
	// been reaped. Close waits for it to reach zero.
	inflight int

	// Wake: an eventfd watched by a multishot poll of its own.
	wakeFd   int
	woken    atomic.Bool
	wakeMu   sync.RWMutex // Wake holds it shared; Close exclusively before closing wakeFd
	wakeGone bool         // guarded by wakeMu

	bufs *uringBufRing

	// np is the ring's descriptor registered with Go's netpoller (see netpollFD; an
	// io_uring descriptor is readable while completions wait in its CQ ring). A Poll
	// that must wait submits without waiting, then parks its goroutine until the ring is
	// readable, instead of blocking its thread in io_uring_enter. Not attached when Go
	// refuses the descriptor.
	np      netpollFD
	collect func(uintptr) bool // r.cqPending made once: a method value per Poll allocates

	// Poll-only state, on the heap so that pointers handed to the kernel stay put.
	waitArg uringGeteventsArg
	waitTS  uringTimespec
	sawWake bool   // set by reapLocked when the wake poll fired
	reaped  uint32 // how many CQEs the last reapLocked consumed (reported or not)

	closeOnce sync.Once
	closeErr  error

	oneShot bool // IOUringConfig.OneShotReadiness
}

// Slot kinds.
const (
	slotFree uint8 = iota
	slotWake
	slotPoll
	slotCancel
	slotAccept
	slotRecv
	slotSend
	slotRead  // ReadAt (uring_file_linux.go)
	slotWrite // WriteAt
)

// uringSlot is the state of one operation.
type uringSlot struct {
	gen  uint32 // bumped when the slot is freed, so a stale user_data never matches
	kind uint8
	dead bool // Deregister'ed registration, or an op whose cancellation was asked
	fd   int32
	mask uint32 // poll mask (slotPoll)
	// One-shot readiness (IOUringConfig.OneShotReadiness): armed says the slot's poll is
	// in the kernel; pair is 1 + the slot of the registration's write direction, on its
	// read slot (0: none yet, made by the first Arm for writing).
	armed bool
	// multi: a write direction's poll is multishot from now on (see completeOnceLocked).
	multi  bool
	pair   uint32
	token  uint64
	target uint64 // slotCancel: the user_data it cancels
	// Token list links (+1, 0 = none) for Cancel.
	prev, next uint32
	// op holds the memory of a send, read or write (nil otherwise).
	op *uringOpMem
}

// uringOpMem is the memory the kernel reads (slotSend, slotWrite) or writes (slotRead)
// for an operation, kept reachable and pinned until the operation's last completion. It
// lives out of line, reused through ioUring.opMems, so that the slot of a readiness
// registration, held for a socket's whole life, stays small: it is most of an idle
// connection's cost in the poller (56 bytes a slot instead of 80).
type uringOpMem struct {
	mem []byte
	pin runtime.Pinner
}

func uringUserData(idx uint32, gen uint32) uint64 { return uint64(gen)<<32 | uint64(idx) }

var errUringClosed = fmt.Errorf("poller: io_uring: %w", os.ErrClosed)

// setup creates and maps the rings.
func (r *ioUring) setup(entries uint32) error {
	var p uringParams
	var errno unix.Errno
	// Newer flags first; a kernel that does not know a flag says EINVAL.
	for _, flags := range []uint32{
		uringSetupCQSize | uringSetupClamp | uringSetupSubmitAll | uringSetupCoopTask,
		uringSetupCQSize | uringSetupClamp | uringSetupSubmitAll,
		uringSetupCQSize | uringSetupClamp,
		0,
	} {
		if uringTestNoCoopTaskrun {
			flags &^= uringSetupCoopTask
		}
		p = uringParams{flags: flags}
		if flags&uringSetupCQSize != 0 {
			p.cqEntries = 4 * entries
		}
		r.fd, errno = uringSetup(entries, &p)
		if errno != unix.EINVAL {
			break
		}
	}
	if errno != 0 {
		r.fd = -1
		return uringRefused("io_uring_setup", errno)
	}
	r.kfeat = p.features
	r.flags = p.flags
	if p.features&uringFeatExtArg == 0 || p.features&uringFeatNoDrop == 0 {
		return fmt.Errorf("%w: io_uring: kernel lacks IORING_FEAT_EXT_ARG or IORING_FEAT_NODROP (Linux 5.11 or later is needed)", ErrUnsupported)
	}

	sqSize := uintptr(p.sqOff.array) + uintptr(p.sqEntries)*4
	cqSize := uintptr(p.cqOff.cqes) + uintptr(p.cqEntries)*uringSizeofCQE
	single := p.features&uringFeatSingleMmap != 0
	if single && cqSize > sqSize {
		sqSize = cqSize
	}
	var err error
	r.ringMem, err = unix.Mmap(r.fd, uringOffSQRing, int(sqSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return uringRefused("mmap of the SQ ring", uringErrno(err))
	}
	cqMem := r.ringMem
	if !single {
		r.cqMem, err = unix.Mmap(r.fd, uringOffCQRing, int(cqSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return uringRefused("mmap of the CQ ring", uringErrno(err))
		}
		cqMem = r.cqMem
	}
	r.sqeMem, err = unix.Mmap(r.fd, uringOffSQEs, int(p.sqEntries)*uringSizeofSQE, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return uringRefused("mmap of the SQEs", uringErrno(err))
	}

	u32 := func(mem []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	r.sqHead = u32(r.ringMem, p.sqOff.head)
	r.sqTail = u32(r.ringMem, p.sqOff.tail)
	r.sqFlags = u32(r.ringMem, p.sqOff.flags)
	r.sqMask = *u32(r.ringMem, p.sqOff.ringMask)
	r.sqEntries = *u32(r.ringMem, p.sqOff.ringEntries)
	r.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	// The SQ index array maps ring positions to SQEs; the identity mapping, written
	// once, lets position i use sqes[i] for ever after.
	array := unsafe.Slice(u32(r.ringMem, p.sqOff.array), p.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	r.sqLocal = atomic.LoadUint32(r.sqTail)

	r.cqHead = u32(cqMem, p.cqOff.head)
	r.cqTail = u32(cqMem, p.cqOff.tail)
	r.cqMask = *u32(cqMem, p.cqOff.ringMask)
	r.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&cqMem[p.cqOff.cqes])), p.cqEntries)

	r.byToken = make(map[uint64]uint32)
	return nil
}

// uringErrno extracts the errno of a failed x/sys call.
func uringErrno(err error) unix.Errno {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return unix.EINVAL
}

// uringRefused builds the error of a refused setup step, saying why the kernel refused.
func uringRefused(step string, errno unix.Errno) error {
	var why string
	switch errno {
	case unix.ENOSYS:
		why = "this kernel has no io_uring"
	case unix.EPERM, unix.EACCES:
		why = "io_uring is forbidden here"
		if b, err := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); err == nil {
			switch strings.TrimSpace(string(b)) {
			case "2":
				why = "kernel.io_uring_disabled=2"
			case "1":
				why = "kernel.io_uring_disabled=1 and this process is not in kernel.io_uring_group"
			default:
				why = "a seccomp filter or security policy forbids io_uring"
			}
		}
	case unix.ENOMEM:
		why = "out of locked memory (RLIMIT_MEMLOCK) or memory"
	case unix.EMFILE, unix.ENFILE:
		why = "out of file descriptors"
	default:
		why = "refused by the kernel"
	}
	return fmt.Errorf("%w: %s: %w (%s)", ErrUnsupported, step, os.NewSyscallError(step, errno), why)
}

// probe asks the kernel which opcodes it supports.
func (r *ioUring) probe() error {
	pr := new(uringProbe)
	if errno := uringRegister(r.fd, uringRegisterProbe, unsafe.Pointer(pr), uringProbeOps); errno != 0 {
		return uringRefused("io_uring_register(IORING_REGISTER_PROBE)", errno)
	}
	has := func(op int) bool {
		return op <= int(pr.lastOp) && op < int(pr.opsLen) && pr.ops[op].flags&uringProbeOpSupported != 0
	}
	for _, op := range []struct {
		code int
		name string
	}{
		{uringOpPollAdd, "POLL_ADD"},
		{uringOpAsyncCancel, "ASYNC_CANCEL"}, {uringOpAccept, "ACCEPT"},
		{uringOpSend, "SEND"}, {uringOpRecv, "RECV"},
	} {
		if !has(op.code) {
			return fmt.Errorf("%w: io_uring: kernel lacks IORING_OP_%s", ErrUnsupported, op.name)
		}
	}
	if has(uringOpSocket) {
		// IORING_OP_SOCKET and multishot accept both arrived in Linux 5.19.
		r.features |= MultishotAccept
	}
	if has(uringOpRead) && has(uringOpWrite) && r.kfeat&uringFeatRWCurPos != 0 {
		// READ and WRITE (5.6), with offset -1 meaning the file position.
		r.features |= FileReadWrite
	}
	return nil
}

// startWake creates the wake eventfd and arms its poll, finding out on the way whether
// the kernel has multishot poll (5.13): a kernel without it fails the POLL_ADD at
// submission with -EINVAL, which the CQ shows before io_uring_enter returns. Such a
// kernel is refused: re-arming a one-shot poll after every completion would report an
// fd that stays ready again and again (level-triggered), and a driver that leaves a
// socket unread until someone asks would spin; epoll's EPOLLET does better there.
func (r *ioUring) startWake() error {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("eventfd", err)
	}
	r.wakeFd = fd
	r.mu.Lock()
	idx := r.allocLocked(slotWake)
	s := &r.slots[idx]
	s.fd = int32(fd)
	s.mask = unix.POLLIN
	r.armPollLocked(idx)
	r.mu.Unlock()
	if _, err := r.submit(); err != nil {
		return err
	}
	tail := atomic.LoadUint32(r.cqTail)
	for head := atomic.LoadUint32(r.cqHead); head != tail; head++ {
		if cqe := r.cqes[head&r.cqMask]; uint32(cqe.userData) == idx && cqe.res < 0 {
			if cqe.res == -int32(unix.EINVAL) {
				return fmt.Errorf("%w: io_uring: kernel lacks multishot poll (Linux 5.13 or later is needed)", ErrUnsupported)
			}
			return fmt.Errorf("poller: io_uring: arming the wake poll: %w", os.NewSyscallError("io_uring poll", unix.Errno(-cqe.res)))
		}
	}
	r.features |= MultishotPoll
	return nil
}

// allocLocked takes a free slot for an operation of kind.
func (r *ioUring) allocLocked(kind uint8) uint32 {
	var idx uint32
	if n := len(r.free); n > 0 {
		idx = r.free[n-1]
		r.free = r.free[:n-1]
	} else {
		r.slots = append(r.slots, uringSlot{})
		idx = uint32(len(r.slots) - 1)
	}
	s := &r.slots[idx]
	s.kind = kind
	s.dead = false
	s.fd = -1
	s.mask = 0
	s.token = 0
	s.prev, s.next = 0, 0
	s.armed, s.multi, s.pair = false, false, 0
	return idx
}

// freeLocked returns a slot whose operation the kernel is done with, unpinning and
// dropping its buffer.
func (r *ioUring) freeLocked(idx uint32) {
	s := &r.slots[idx]
	switch s.kind {
	case slotAccept, slotRecv, slotSend, slotRead, slotWrite:
		r.unlinkTokenLocked(idx)
	}
	if m := s.op; m != nil {
		m.pin.Unpin()
		m.mem = nil
		s.op = nil
		r.opMems = append(r.opMems, m)
	}
	s.kind = slotFree
	s.gen++
	r.free = append(r.free, idx)
}

func (r *ioUring) linkTokenLocked(idx uint32) {
	s := &r.slots[idx]
	if head, ok := r.byToken[s.token]; ok {
		s.next = head + 1
		r.slots[head].prev = idx + 1
	}
	r.byToken[s.token] = idx
}

func (r *ioUring) unlinkTokenLocked(idx uint32) {
	s := &r.slots[idx]
	if s.prev != 0 {
		r.slots[s.prev-1].next = s.next
	} else if s.next != 0 {
		r.byToken[s.token] = s.next - 1
	} else {
		delete(r.byToken, s.token)
	}
	if s.next != 0 {
		r.slots[s.next-1].prev = s.prev
	}
	s.prev, s.next = 0, 0
}

// pushLocked queues one SQE: straight into the SQ ring when it has room and nothing is
// waiting before it, else at the end of the backlog (submission order is kept, which
// Deregister and Cancel rely on: an ASYNC_CANCEL is processed after the operation it
// targets has started).
func (r *ioUring) pushLocked(sqe *uringSQE) {
	r.inflight++
	if len(r.backlog) == 0 && r.sqLocal-atomic.LoadUint32(r.sqHead) < r.sqEntries {
		r.sqes[r.sqLocal&r.sqMask] = *sqe
		r.sqLocal++
		// The tail store publishes the SQE: the kernel reads the entry only after it
		// sees the new tail (atomics are sequentially consistent in Go).
		atomic.StoreUint32(r.sqTail, r.sqLocal)
		return
	}
	r.backlog = append(r.backlog, *sqe)
}

// drainBacklogLocked moves queued SQEs into the ring as far as it has room, and returns
// how many entries the ring holds that the kernel has not consumed yet.
func (r *ioUring) drainBacklogLocked() uint32 {
	if len(r.backlog) > 0 {
		room := r.sqEntries - (r.sqLocal - atomic.LoadUint32(r.sqHead))
		n := min(int(room), len(r.backlog))
		for i := range n {
			r.sqes[r.sqLocal&r.sqMask] = r.backlog[i]
			r.sqLocal++
		}
		if n > 0 {
			atomic.StoreUint32(r.sqTail, r.sqLocal)
			rest := copy(r.backlog, r.backlog[n:])
			clear(r.backlog[rest:])
			r.backlog = r.backlog[:rest]
		}
	}
	return r.sqLocal - atomic.LoadUint32(r.sqHead)
}

// armPollLocked queues the POLL_ADD of registration (or wake) slot idx.
func (r *ioUring) armPollLocked(idx uint32) {
	s := &r.slots[idx]
	sqe := uringSQE{
		opcode:   uringOpPollAdd,
		fd:       s.fd,
		len:      uringPollAddMulti,
		opFlags:  uringPollEvents(s.mask),
		userData: uringUserData(idx, s.gen),
	}
	r.pushLocked(&sqe)
}

// submit hands the queued SQEs to the kernel (one io_uring_enter for the batch, more
// only while a backlog larger than the ring remains). It reports stranded when the
// kernel refused entries for now (EAGAIN: no memory for requests; EBUSY: completions
// waiting for CQ room, on kernels that refuse to submit then): they stay queued, and
// only a later submission hands them over, after completions have freed what the
// kernel lacked.
func (r *ioUring) submit() (stranded bool, err error) {
	// Hold the ring alive across the system call: a Flush racing Close would
	// otherwise touch unmapped rings or enter a closed (maybe reused) fd.
	r.life.RLock()
	defer r.life.RUnlock()
	if r.released {
		return false, errUringClosed
	}
	for {
		r.mu.Lock()
		n := r.drainBacklogLocked()
		more := len(r.backlog) > 0
		r.mu.Unlock()
		if n == 0 {
			return false, nil
		}
		// Another goroutine may submit the same entries concurrently: the kernel
		// takes at most what the ring holds, so a too-large count is harmless. A
		// short count (the kernel ran short after taking some, or another goroutine
		// took some) loops: the next round submits what is left, or learns why not.
		k, errno := uringEnter(r.fd, n, 0, 0, nil, 0)
		switch errno {
		case 0:
			if k >= int(n) && !more {
				return false, nil
			}
		case unix.EINTR:
		case unix.EAGAIN, unix.EBUSY:
			return true, nil
		default:
			return false, os.NewSyscallError("io_uring_enter", errno)
		}
	}
}

func (r *ioUring) Name() string { return "io_uring" }

// Features reports the optional operations found at creation.
func (r *ioUring) Features() Features { return r.features }

// uringPollMask is the poll mask of a registration with the interests. POLLERR and
// POLLHUP are always reported by the kernel.
func uringPollMask(interest Interest) uint32 {
	mask := uint32(unix.POLLRDHUP)
	if interest&Read != 0 {
		mask |= unix.POLLIN
	}
	if interest&Write != 0 {
		mask |= unix.POLLOUT
	}
	return mask
}

// uringReady maps a poll result mask to Ready, as epoll's bits are: a hang-up or an
// error makes both directions ready, so whoever waits tries the operation and learns of
// it from the system call.
func uringReady(e uint32) Ready {
	var r Ready
	if e&unix.POLLIN != 0 {
		r |= Readable
	}
	if e&unix.POLLOUT != 0 {
		r |= Writable
	}
	if e&unix.POLLRDHUP != 0 {
		r |= Readable | ReadClosed
	}
	if e&unix.POLLHUP != 0 {
		r |= Readable | Writable | ReadClosed | WriteClosed
	}
	if e&unix.POLLERR != 0 {
		r |= Readable | Writable | Error
	}
	return r
}

// Register arms a multishot POLL_ADD on fd; with IOUringConfig.OneShotReadiness it arms
// nothing, and Arm arms one-shot polls per direction (see Armer): the rest of this comment
// is about the multishot form.
//
// Semantics against epoll's EPOLLET: the poll is armed at the next Poll or Flush and
// reports the fd's state at that moment if it is ready, then one event per wake-up of
// the fd's wait queue (new data, freed send space, a hang-up), which is what EPOLLET
// reports too; it does not repeat while the fd stays ready and nothing happens. When the
// kernel ends the multishot poll on its own (a completion without IORING_CQE_F_MORE:
// CQ overflow, a kernel without multishot poll, a -ECANCELED this package did not ask
// for), it is re-armed, and the new arming reports the current state: a transition is
// never lost, at worst reported twice. If the kernel refuses the poll itself (EBADF: fd
// is not open), one event with Ready = Readable|Writable|Error and Res = -errno is
// reported and the registration ends (Deregister then answers ENOENT).
//
// Unlike epoll, the kernel holds a reference to fd's file while the poll is armed:
// closing fd without Deregister leaves the socket open (no FIN, no RST) until the ring
// is closed. Call Deregister before closing. Registering an fd number that still has a
// registration fails with EEXIST.
func (r *ioUring) Register(fd int, token uint64, interest Interest) error {
	if fd < 0 || fd > math.MaxInt32 {
		return fmt.Errorf("poller: io_uring Register: %w", os.NewSyscallError("io_uring poll", unix.EBADF))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errUringClosed
	}
	if _, ok := r.regLocked(fd); ok {
		return fmt.Errorf("poller: io_uring Register: fd %d: %w", fd, os.NewSyscallError("io_uring poll", unix.EEXIST))
	}
	idx := r.allocLocked(slotPoll)
	s := &r.slots[idx]
	s.fd = int32(fd)
	s.token = token
	s.mask = uringPollMask(interest)
	r.setRegLocked(fd, idx)
	if r.oneShot {
		// The read direction's slot (the write one is made by the first Arm for
		// writing); nothing is armed until a caller waits.
		s.mask = unix.POLLIN | unix.POLLRDHUP
		return nil
	}
	r.armPollLocked(idx)
	return nil
}

// Arm arms fd's registration for the interests (see Armer). Without
// IOUringConfig.OneShotReadiness a registration is always armed, and Arm only checks
// that it exists.
func (r *ioUring) Arm(fd int, token uint64, interest Interest) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx, err := r.registrationLocked("Arm", fd, token)
	if err != nil {
		return err
	}
	if !r.oneShot {
		return nil
	}
	if interest&Read != 0 {
		r.armOnceLocked(idx)
	}
	if interest&Write != 0 {
		w := r.slots[idx].pair
		if w == 0 {
			wi := r.allocLocked(slotPoll) // may move r.slots: index, do not keep pointers
			r.slots[wi].fd = int32(fd)
			r.slots[wi].token = token
			r.slots[wi].mask = unix.POLLOUT
			w = wi + 1
			r.slots[idx].pair = w
		}
		r.armOnceLocked(w - 1)
	}
	return nil
}

// registrationLocked returns the slot of fd's registration with token, or the error op
// (the caller's name) reports: the ring is closed, or no such registration (ENOENT).
func (r *ioUring) registrationLocked(op string, fd int, token uint64) (uint32, error) {
	if r.closed {
		return 0, errUringClosed
	}
	// Range check before the table lookup: regLocked indexes its dense table with any
	// number below uringDenseFds, negative ones included, so Arm(-1) or Deregister(-1)
	// panicked with an index out of range instead of reporting that no such registration
	// exists (Register refuses negative numbers, so none ever does).
	if fd < 0 {
		return 0, fmt.Errorf("poller: io_uring %s: fd %d token %#x: %w", op, fd, token, os.NewSyscallError("io_uring poll", unix.ENOENT))
	}
	idx, ok := r.regLocked(fd)
	if !ok || r.slots[idx].token != token {
		return 0, fmt.Errorf("poller: io_uring %s: fd %d token %#x: %w", op, fd, token, os.NewSyscallError("io_uring poll", unix.ENOENT))
	}
	return idx, nil
}

// armOnceLocked queues a one-shot POLL_ADD for slot idx unless one is in the kernel.
func (r *ioUring) armOnceLocked(idx uint32) {
	s := &r.slots[idx]
	if s.armed {
		return
	}
	s.armed = true
	sqe := uringSQE{
		opcode:   uringOpPollAdd,
		fd:       s.fd,
		opFlags:  uringPollEvents(s.mask),
		userData: uringUserData(idx, s.gen),
	}
	if s.multi {
		sqe.len = uringPollAddMulti
	}
	r.pushLocked(&sqe)
}

// Deregister queues the cancellation of fd's registration. From now on no event for it
// is reported (completions already in the CQ ring are dropped when reaped); the kernel
// releases its reference to the file once the cancellation is submitted, at the next
// Poll or Flush.
//
// The cancellation is an IORING_OP_ASYNC_CANCEL, not an IORING_OP_POLL_REMOVE: in this
// package's tests on Linux 6.18, a POLL_REMOVE racing with a wake-up of the fd completed
// without removing the poll, which then stayed armed (and held the file) for good;
// ASYNC_CANCEL marks the poll cancelled whoever is handling it at that moment.
// uringDenseFds bounds the descriptor numbers ioUring.regs indexes directly.
const uringDenseFds = 1 << 20

// regLocked returns the slot of fd's readiness registration.
func (r *ioUring) regLocked(fd int) (uint32, bool) {
	if fd < uringDenseFds {
		if fd < len(r.regs) && r.regs[fd] != 0 {
			return r.regs[fd] - 1, true
		}
		return 0, false
	}
	idx, ok := r.regsHigh[fd]
	return idx, ok
}

func (r *ioUring) setRegLocked(fd int, idx uint32) {
	r.nregs++
	if fd >= uringDenseFds {
		if r.regsHigh == nil {
			r.regsHigh = make(map[int]uint32)
		}
		r.regsHigh[fd] = idx
		return
	}
	if fd >= len(r.regs) {
		grown := make([]uint32, min(max(fd+1, 2*len(r.regs), 64), uringDenseFds))
		copy(grown, r.regs)
		r.regs = grown
	}
	r.regs[fd] = idx + 1
}

func (r *ioUring) delRegLocked(fd int) {
	r.nregs--
	if fd >= uringDenseFds {
		delete(r.regsHigh, fd)
		return
	}
	r.regs[fd] = 0
}

func (r *ioUring) Deregister(fd int, token uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx, err := r.registrationLocked("Deregister", fd, token)
	if err != nil {
		return err
	}
	r.delRegLocked(fd)
	if r.oneShot {
		pair := r.slots[idx].pair
		r.dropOnceLocked(idx)
		if pair != 0 {
			r.dropOnceLocked(pair - 1)
		}
		return nil
	}
	r.cancelLocked(idx)
	return nil
}

// dropOnceLocked ends a one-shot registration slot: cancelled if its poll is in the
// kernel (the final completion frees it), freed now otherwise.
func (r *ioUring) dropOnceLocked(idx uint32) {
	s := &r.slots[idx]
	s.pair = 0
	if s.armed {
		r.cancelLocked(idx)
		return
	}
	s.dead = true
	r.freeLocked(idx)
}

// Accept queues an accept on the listening fd: multishot when Features has
// MultishotAccept (Event.More stays set while it is armed; submit again when an event
// comes without More), one connection per submission otherwise. Accepted fds are
// non-blocking and close-on-exec; read the peer address with getpeername.
func (r *ioUring) Accept(fd int, token uint64) error {
	sqe := uringSQE{opcode: uringOpAccept, fd: int32(fd), opFlags: unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC}
	if r.features&MultishotAccept != 0 {
		sqe.ioprio = uringAcceptMultishot
	}
	return r.submitOp("Accept", slotAccept, fd, token, &sqe, nil)
}

// Recv queues a receive on fd into a provided buffer chosen by the kernel when the data
// arrives. The Event's Res is the byte count (0 at end of stream) or -errno (-ENOBUFS
// when every buffer is held: Release some and submit again); when its Buf is >= 0 the
// caller owns that buffer until Release, whatever Res says.
func (r *ioUring) Recv(fd int, token uint64) error {
	if r.bufs == nil {
		return fmt.Errorf("%w: io_uring Recv: this kernel has no provided-buffer rings (Linux 5.19)", ErrUnsupported)
	}
	sqe := uringSQE{opcode: uringOpRecv, fd: int32(fd), flags: uringSQEBufferSelect, bufIndex: uringBufGroup}
	return r.submitOp("Recv", slotRecv, fd, token, &sqe, nil)
}

// uringMaxSend caps one Send's length (the kernel caps a transfer near 2 GiB anyway);
// the Event reports how much was sent, and the caller sends the rest.
const uringMaxSend = 1 << 30

// Send queues a send of p on fd with MSG_NOSIGNAL. p is pinned and kept reachable until
// the operation's Event arrives, and must not be modified before then; at most 1 GiB is
// sent per call (the Event's Res says how much).
func (r *ioUring) Send(fd int, token uint64, p []byte) error {
	if len(p) > uringMaxSend {
		p = p[:uringMaxSend]
	}
	sqe := uringSQE{opcode: uringOpSend, fd: int32(fd), len: uint32(len(p)), opFlags: unix.MSG_NOSIGNAL}
	return r.submitOp("Send", slotSend, fd, token, &sqe, p)
}

func (r *ioUring) submitOp(name string, kind uint8, fd int, token uint64, sqe *uringSQE, p []byte) error {
	if fd < 0 || fd > math.MaxInt32 {
		return fmt.Errorf("poller: io_uring %s: %w", name, os.NewSyscallError(strings.ToLower(name), unix.EBADF))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errUringClosed
	}
	idx := r.allocLocked(kind)
	s := &r.slots[idx]
	s.fd = int32(fd)
	s.token = token
	if len(p) > 0 {
		m := &uringOpMem{}
		if n := len(r.opMems); n > 0 {
			m = r.opMems[n-1]
			r.opMems = r.opMems[:n-1]
		}
		m.mem = p
		m.pin.Pin(&p[0])
		s.op = m
		sqe.addr = uint64(uintptr(unsafe.Pointer(&p[0])))
	}
	r.linkTokenLocked(idx)
	sqe.userData = uringUserData(idx, s.gen)
	r.pushLocked(sqe)
	return nil
}

// Cancel queues an IORING_OP_ASYNC_CANCEL for every Accept, Recv, Send, ReadAt and
// WriteAt still in flight with token (not for a readiness registration: use Deregister). Each ends with
// its own Event, Res = -ECANCELED when the cancellation caught it; the cancel requests
// themselves report nothing (so OpCancel never appears). Completions that won the race
// against the cancellation are reported as usual and belong to the caller: an accepted
// connection to close or keep, received bytes in a buffer to Release, a partial send.
func (r *ioUring) Cancel(token uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errUringClosed
	}
	head, ok := r.byToken[token]
	if !ok {
		return nil
	}
	for idx := head + 1; idx != 0; idx = r.slots[idx-1].next {
		r.cancelLocked(idx - 1)
	}
	return nil
}

// cancelLocked queues the cancellation of slot idx's operation, once.
func (r *ioUring) cancelLocked(idx uint32) {
	s := &r.slots[idx]
	if s.dead && s.kind != slotPoll && s.kind != slotWake {
		return
	}
	s.dead = true
	r.queueCancelLocked(uringUserData(idx, s.gen))
}

func (r *ioUring) queueCancelLocked(target uint64) {
	c := r.allocLocked(slotCancel)
	r.slots[c].target = target
	r.pushLocked(&uringSQE{opcode: uringOpAsyncCancel, fd: -1, addr: target, userData: uringUserData(c, r.slots[c].gen)})
}

// Flush submits the queued operations now. When the kernel refuses them for now
// (EAGAIN: no memory for requests; EBUSY: no room for completions), they stay queued,
// Flush returns nil, and the Poll in progress is woken to retry them.
func (r *ioUring) Flush() error {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return errUringClosed
	}
	stranded, err := r.submit()
	if stranded {
		// The entries stay in the SQ ring, and the Poll in progress may be asleep
		// without them (it submitted before they were queued) and with nothing else
		// to complete: wake it, so that it retries them (waiting for completions
		// between attempts, see Poll). Returning the error instead would not help the
		// caller, who can do nothing but try again later too.
		r.Wake()
	}
	return err
}

// Wake makes the Poll in progress (or the next one) return.
func (r *ioUring) Wake() error {
	r.wakeMu.RLock()
	defer r.wakeMu.RUnlock()
	if r.wakeGone {
		return errUringClosed
	}
	if !r.woken.CompareAndSwap(false, true) {
		return nil // a wake is pending and its completion not yet reaped
	}
	one := [8]byte{1}
	for {
		_, err := unix.Write(r.wakeFd, one[:])
		switch err {
		case nil, unix.EAGAIN: // EAGAIN: the counter is full, the poll has fired
			return nil
		case unix.EINTR:
			continue
		}
		r.woken.Store(false)
		return os.NewSyscallError("write eventfd", err)
	}
}

// Poll submits the queued operations and waits up to timeout for completions, in one
// io_uring_enter (IORING_ENTER_GETEVENTS with an IORING_ENTER_EXT_ARG timeout), then
// turns CQEs into events. Internal completions (the wake poll, removals,
// cancellations) produce no event; it returns 0 when woken, on timeout, or on EINTR.
func (r *ioUring) Poll(events []Event, timeout time.Duration) (int, error) {
	if len(events) == 0 {
		return 0, errors.New("poller: io_uring Poll: empty events slice")
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	// flushed: this Poll asked the kernel to flush its CQ overflow list and has reaped
	// nothing since. A flush that brings completions may be repeated (the list can hold
	// many times what the ring does, and the completions it brings may all be silent
	// ones: the cancellations of a burst of Deregisters); one that brings nothing is
	// not, and the wait goes to the kernel instead (see below).
	flushed := false
	// retry: the kernel refused to take submitted entries for now (EAGAIN, EBUSY):
	// they are still in the SQ ring, and the next wait is a short one without
	// submitting, after which they are offered again (see uringSubmitRetry).
	retry := false
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return 0, errUringClosed
		}
		toSubmit := r.drainBacklogLocked()
		backlog := len(r.backlog) > 0
		r.sawWake = false
		n := r.reapLocked(events)
		if r.reaped > 0 {
			flushed = false
		}
		woke := r.sawWake
		overflow := atomic.LoadUint32(r.sqFlags)&uringSQCQOverflow != 0
		r.mu.Unlock()
		if woke {
			r.drainWake()
		}
		if backlog {
			// More submissions than the SQ ring holds: hand them all over before
			// waiting, or an operation left in the backlog would never start.
			stranded, err := r.submit()
			if err != nil {
				return n, err
			}
			toSubmit = 0
			retry = retry || stranded
		}
		if n > 0 || woke || timeout == 0 {
			var flags uint32
			if n == 0 && overflow && !flushed {
				flags = uringEnterGetEvents // flush the kernel's overflow list into the ring
				flushed = true
			}
			if toSubmit > 0 || flags != 0 {
				// A transient failure leaves the entries queued for the next Poll.
				if _, errno := uringEnter(r.fd, toSubmit, 0, flags, nil, 0); errno != 0 && !uringTransient(errno) {
					return n, os.NewSyscallError("io_uring_enter", errno)
				}
				if flags != 0 {
					continue // reap what the flush brought
				}
				if timeout == 0 && n < len(events) {
					// Operations the kernel completed inline while submitting (a file
					// read served from the page cache, a send with room) are in the CQ
					// ring now: report them in this Poll rather than the next.
					r.mu.Lock()
					r.sawWake = false
					n += r.reapLocked(events[n:])
					woke = r.sawWake
					r.mu.Unlock()
					if woke {
						r.drainWake()
					}
				}
			}
			return n, nil
		}
		// With the overflow flag set, the ring's descriptor stays readable: waiting on
		// Go's netpoller would return at once, again and again. Flush the list; if a
		// flush brought nothing, wait in the kernel, which flushes as it waits.
		if r.np.attached() && !(overflow && flushed) && !retry {
			// Nothing ready: submit without waiting, then wait on Go's netpoller.
			if overflow {
				// Submit and flush the kernel's overflow list into the ring in one call.
				flushed = true
				_, errno := uringEnter(r.fd, toSubmit, 0, uringEnterGetEvents, nil, 0)
				if errno != 0 && !uringTransient(errno) {
					return 0, os.NewSyscallError("io_uring_enter", errno)
				}
				retry = errno == unix.EAGAIN || errno == unix.EBUSY
				continue // reap what the flush brought
			}
			if toSubmit > 0 {
				k, errno := uringEnter(r.fd, toSubmit, 0, 0, nil, 0)
				switch {
				case errno != 0 && !uringTransient(errno):
					return 0, os.NewSyscallError("io_uring_enter", errno)
				case errno != 0:
					// The entries are still in the SQ ring; parked on the netpoller
					// until some completion, which may never come, they would not
					// be offered again: wait briefly in the kernel, then retry.
					retry = true
					continue
				case k < int(toSubmit):
					continue // submit the rest, or learn why not
				}
			}
			more, err := r.waitNetpoll(deadline)
			if err != nil {
				return 0, err
			}
			if !more {
				return 0, nil // the timeout passed
			}
			continue
		}
		// Nothing ready: submit and wait in one system call.
		arg := unsafe.Pointer(nil)
		argSize := uintptr(0)
		flags := uint32(uringEnterGetEvents)
		wait := time.Duration(-1)
		if timeout > 0 {
			wait = time.Until(deadline)
			if wait <= 0 {
				if toSubmit > 0 {
					if _, errno := uringEnter(r.fd, toSubmit, 0, 0, nil, 0); errno != 0 && !uringTransient(errno) {
						return 0, os.NewSyscallError("io_uring_enter", errno)
					}
				}
				return 0, nil
			}
		}
		sub := toSubmit
		if retry {
			// The kernel refused the last submission for want of memory for requests
			// or of CQ room. Completions free both: wait for one without submitting
			// (the kernel skips the wait when the submission fails), but not for long,
			// as none may come, and then offer the entries again.
			sub = 0
			if wait < 0 || wait > uringSubmitRetry {
				wait = uringSubmitRetry
			}
			retry = false
		}
		if wait >= 0 {
			r.waitTS = uringTimespecOf(wait)
			r.waitArg = uringGeteventsArg{ts: uint64(uintptr(unsafe.Pointer(&r.waitTS)))}
			arg, argSize = unsafe.Pointer(&r.waitArg), uringSizeofGeteventsArg
			flags |= uringEnterExtArg
		}
		_, errno := uringEnter(r.fd, sub, 1, flags, arg, argSize)
		switch errno {
		case 0, unix.ETIME:
			// Reap at the top of the loop; an ETIME with nothing to reap ends the
			// loop at the deadline check. After a short count (the kernel took only
			// part of the entries, and then does not wait) the loop submits the rest.
		case unix.EINTR:
			return 0, nil
		case unix.EAGAIN, unix.EBUSY:
			retry = true
		default:
			return 0, os.NewSyscallError("io_uring_enter", errno)
		}
	}
}

// uringSubmitRetry bounds the wait that follows a submission the kernel refused for
// now (EAGAIN, EBUSY): the entries stay in the SQ ring, and the wait ends early to offer
// them again, since the completions that would free what the kernel lacked may never
// come (the refused entries may be the only work there is).
var uringSubmitRetry = time.Millisecond

// uringTransient reports the io_uring_enter errors that reaping and retrying cure:
// EAGAIN (no memory for requests right now), EBUSY (completions waiting for room in the
// CQ ring on kernels that refuse to submit then), ETIME (the wait timed out).
func uringTransient(errno unix.Errno) bool {
	return errno == unix.EAGAIN || errno == unix.EBUSY || errno == unix.ETIME || errno == unix.EINTR
}

// drainWake empties the wake eventfd after its poll fired. woken is cleared first: a
// Wake after the clear writes again and fires the poll again (it is edge-triggered, a
// write is a wake-up even when the counter was not drained), so no wake is lost.
func (r *ioUring) drainWake() {
	r.woken.Store(false)
	r.wakeMu.RLock()
	if !r.wakeGone {
		var buf [8]byte
		unix.Read(r.wakeFd, buf[:]) // EAGAIN when already drained: nothing to do
	}
	r.wakeMu.RUnlock()
}

// reapLocked turns CQEs into events until the CQ ring is empty or events is full.
func (r *ioUring) reapLocked(events []Event) int {
	n := 0
	head := atomic.LoadUint32(r.cqHead)
	start := head
	tail := atomic.LoadUint32(r.cqTail) // the kernel wrote the CQEs before the tail
	for head != tail && n < len(events) {
		cqe := r.cqes[head&r.cqMask]
		head++
		if r.completeLocked(&cqe, &events[n]) {
			n++
		}
	}
	// Hand the entries back to the kernel only after they have been copied out.
	r.reaped = head - start
	atomic.StoreUint32(r.cqHead, head)
	return n
}

// completeLocked processes one CQE and reports whether it filled ev.
func (r *ioUring) completeLocked(cqe *uringCQE, ev *Event) bool {
	idx, gen := uint32(cqe.userData), uint32(cqe.userData>>32)
	if idx >= uint32(len(r.slots)) || r.slots[idx].gen != gen || r.slots[idx].kind == slotFree {
		return false // cannot happen: every slot outlives its operation's last CQE
	}
	s := &r.slots[idx]
	more := cqe.flags&uringCQEFMore != 0
	switch s.kind {
	case slotWake:
		if cqe.res > 0 {
			r.sawWake = true
		}
		if !more {
			r.inflight--
			if r.closed || s.dead {
				r.freeLocked(idx)
			} else {
				r.armPollLocked(idx)
			}
		}
		return false

	case slotPoll:
		if r.oneShot {
			return r.completeOnceLocked(idx, cqe, ev)
		}
		if !more {
			r.inflight--
			if s.dead || r.closed {
				r.freeLocked(idx)
				return false
			}
			if cqe.res < 0 && cqe.res != -int32(unix.ECANCELED) {
				// The kernel refused the poll itself (EBADF: the fd was closed
				// before the poll was armed; EINVAL, ENOMEM...). Report an error
				// readiness so that the owner tries its syscall, and stop: re-arming
				// would fail the same way.
				s.dead = true
				if cur, ok := r.regLocked(int(s.fd)); ok && cur == idx {
					r.delRegLocked(int(s.fd))
				}
				tok := s.token
				r.freeLocked(idx)
				*ev = Event{Token: tok, Ready: Readable | Writable | Error, Op: OpReady, Res: cqe.res, Buf: -1}
				return true
			}
			// Ended without our asking (CQ overflow, a cancelled task's work,
			// no multishot): arm again; the new poll reports the state it finds.
			r.armPollLocked(idx)
		}
		if s.dead || cqe.res <= 0 {
			return false
		}
		*ev = Event{Token: s.token, Ready: uringReady(uint32(cqe.res)), Op: OpReady, More: true, Res: cqe.res, Buf: -1}
		return true

	case slotCancel:
		r.inflight--
		target := s.target
		r.freeLocked(idx)
		if cqe.res == -int32(unix.EALREADY) {
			// The operation was running and could only be signalled; ask again
			// (at the next submission) until its own completion arrives.
			ti, tg := uint32(target), uint32(target>>32)
			if ti < uint32(len(r.slots)) && r.slots[ti].gen == tg && r.slots[ti].kind != slotFree {
				r.queueCancelLocked(target)
			}
		}
		return false

	case slotAccept, slotRecv, slotSend, slotRead, slotWrite:
		op := OpSend
		switch s.kind {
		case slotAccept:
			op = OpAccept
		case slotRecv:
			op = OpRecv
		case slotRead:
			op = OpRead
		case slotWrite:
			op = OpWrite
		}
		buf := int32(-1)
		if cqe.flags&uringCQEFBuffer != 0 {
			buf = int32(cqe.flags >> uringCQEBufferShift)
			if r.bufs != nil {
				r.bufs.taken(buf)
			}
		}
		*ev = Event{Token: s.token, Op: op, More: more, Res: cqe.res, Buf: buf}
		if !more {
			r.inflight--
			r.freeLocked(idx)
		}
		if r.closed {
			// Nobody will read it: give a buffer back, close an accepted fd.
			if buf >= 0 {
				r.bufs.release(buf)
			}
			if op == OpAccept && cqe.res >= 0 {
				unix.Close(int(cqe.res))
			}
			return false
		}
		return true
	}
	return false
}

// completeOnceLocked processes the completion of a one-shot readiness poll (slot idx).
func (r *ioUring) completeOnceLocked(idx uint32, cqe *uringCQE, ev *Event) bool {
	s := &r.slots[idx]
	if cqe.flags&uringCQEFMore == 0 {
		// The poll's last completion: every one-shot poll's only one, and the end of a
		// write direction's multishot poll (see below).
		r.inflight--
		s.armed = false
	}
	if s.dead || r.closed {
		if !s.armed {
			r.freeLocked(idx)
		}
		return false
	}
	switch {
	case cqe.res == -int32(unix.ECANCELED) || cqe.res == 0:
		// Not asked for (a cancellation is asked for only with dead set), or nothing
		// to report: someone waits for this direction, so arm it again.
		if !s.armed {
			r.armOnceLocked(idx)
		}
		return false
	case cqe.res < 0:
		// The kernel refused the poll (EBADF: the fd was closed under its
		// registration). Report an error readiness, so that the waiter makes its
		// system call and learns of the error from it; the next Arm tries again.
		*ev = Event{Token: s.token, Ready: Readable | Writable | Error, Op: OpReady, More: true, Res: cqe.res, Buf: -1}
		return true
	}
	res := uint32(cqe.res)
	*ev = Event{Token: s.token, Ready: uringReady(res), Op: OpReady, More: true, Res: cqe.res, Buf: -1}
	if s.mask != unix.POLLOUT {
		return true
	}
	if res&(unix.POLLOUT|unix.POLLERR|unix.POLLHUP) == 0 {
		// POLLRDHUP alone: the peer has shut down its writing side, and the socket is
		// still not writable. io_uring adds POLLRDHUP to every poll's events, so a
		// POLLOUT poll on such a socket completes at once each time it is armed: a
		// one-shot poll cannot wait for send space there (re-armed, it would spin;
		// freed, the writer would sleep for ever, as a half-closing client that reads
		// the rest of its echo saw). This direction waits on a multishot poll from
		// now on, which posts at each wake-up of the socket (freed send space among
		// them) and is kept armed; the read side's news is reported all the same.
		s.multi = true
		if !s.armed {
			r.armOnceLocked(idx)
		}
		return true
	}
	if !s.multi {
		// A write direction's slot lives only while a writer waits (a full send buffer
		// is rare and brief): freed now, an idle connection keeps one slot, its read
		// direction's. The next Arm for writing makes another.
		if ri, ok := r.regLocked(int(s.fd)); ok && r.slots[ri].pair == idx+1 {
			r.slots[ri].pair = 0
		}
		r.freeLocked(idx)
	}
	return true
}

// Buffer returns the first n bytes of provided buffer id, valid until Release(id) or
// Close (after Close it returns nil). It panics if id or n is out of range, or if the
// buffer is not held by the caller (the kernel may be writing into it).
func (r *ioUring) Buffer(id int32, n int) []byte {
	if r.bufs == nil {
		panic("poller: io_uring Buffer: no provided buffers (Features lacks ProvidedBuffers)")
	}
	return r.bufs.buffer(id, n)
}

// Release gives provided buffer id back to the kernel. Releasing a buffer that the
// caller does not hold panics (it would let the kernel write into a buffer twice).
func (r *ioUring) Release(id int32) {
	if r.bufs == nil {
		panic("poller: io_uring Release: no provided buffers (Features lacks ProvidedBuffers)")
	}
	r.bufs.release(id)
}

// Close cancels every operation in flight (readiness registrations, the wake poll,
// accepts, receives, sends), reaps their completions — closing connections accepted in
// the meantime and giving back their buffers — and then unmaps the rings and buffers and
// closes the ring and the eventfd. Poll must not be running. Memory the kernel may still
// use is never freed: if an operation has not completed after 5 seconds, Close closes
// the ring (the kernel then cancels and waits for it on its own), leaks the buffers it
// may use, and returns an error saying so. Calls after the first return its result.
func (r *ioUring) Close() error {
	// A second Close (concurrent or later) waits for the first and returns its result.
	r.closeOnce.Do(func() { r.closeErr = r.close() })
	return r.closeErr
}

func (r *ioUring) close() error {
	r.mu.Lock()
	r.closed = true
	// Cancel everything still owned by the kernel. Entries still in the backlog are
	// submitted first (ring order), then cancelled by the requests queued after them.
	for idx := range r.slots {
		switch r.slots[idx].kind {
		case slotPoll:
			if r.oneShot && !r.slots[idx].armed {
				continue // not in the kernel: nothing to cancel or wait for
			}
			r.cancelLocked(uint32(idx))
		case slotWake, slotAccept, slotRecv, slotSend, slotRead, slotWrite:
			r.cancelLocked(uint32(idx))
		}
	}
	r.mu.Unlock()

	deadline := time.Now().Add(uringCloseWait)
	scratch := make([]Event, 64)
	refused := false
	for {
		r.mu.Lock()
		toSubmit := r.drainBacklogLocked()
		r.reapLocked(scratch) // with closed set, nothing is reported or re-armed
		left := r.inflight
		r.mu.Unlock()
		if left == 0 || time.Now().After(deadline) {
			break
		}
		if refused {
			// The kernel refused the last submission (EAGAIN, EBUSY) and, as it
			// does then, did not wait: wait for completions without submitting,
			// or this loop would spin until the deadline.
			toSubmit = 0
		}
		r.waitTS = uringTimespecOf(50 * time.Millisecond)
		r.waitArg = uringGeteventsArg{ts: uint64(uintptr(unsafe.Pointer(&r.waitTS)))}
		_, errno := uringEnter(r.fd, toSubmit, 1, uringEnterGetEvents|uringEnterExtArg, unsafe.Pointer(&r.waitArg), uringSizeofGeteventsArg)
		refused = toSubmit > 0 && (errno == unix.EAGAIN || errno == unix.EBUSY)
	}

	r.wakeMu.Lock()
	r.wakeGone = true
	r.wakeMu.Unlock()

	var leakErr error
	r.mu.Lock()
	left := r.inflight
	if left > 0 {
		// Keep what the kernel may still read or write out of the garbage
		// collector's and the allocator's hands for good.
		var leaked []any
		for i := range r.slots {
			if s := &r.slots[i]; s.kind != slotFree {
				leaked = append(leaked, s.op)
			}
		}
		if r.bufs != nil {
			leaked = append(leaked, r.bufs)
			r.bufs.leak = true // closed by release, but not unmapped
		}
		uringLeakMu.Lock()
		uringLeaked = append(uringLeaked, leaked...)
		uringLeakMu.Unlock()
		leakErr = fmt.Errorf("poller: io_uring Close: %d operations still in flight after %v; their memory is left allocated", left, uringCloseWait)
	}
	r.mu.Unlock()
	if err := r.release(); err != nil && leakErr == nil {
		return err
	}
	return leakErr
}

var (
	uringLeakMu sync.Mutex
	uringLeaked []any // see Close
)

// release unmaps and closes everything set up so far.
func (r *ioUring) release() error {
	r.life.Lock()
	defer r.life.Unlock()
	r.released = true
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if r.bufs != nil {
		keep(r.bufs.close(r.fd)) // r.bufs stays: Buffer and Release see it closed
	}
	if r.np.attached() {
		// Before the rings are unmapped: close takes the descriptor out of Go's
		// netpoller, wakes a Poll parked on it, waits until no cqPending call is still
		// reading the ring, and closes the descriptor.
		keep(r.np.close())
		r.fd = -1
	}
	for _, m := range []*[]byte{&r.sqeMem, &r.cqMem, &r.ringMem} {
		if *m != nil {
			keep(os.NewSyscallError("munmap", unix.Munmap(*m)))
			*m = nil
		}
	}
	r.sqes, r.cqes = nil, nil
	if r.fd >= 0 {
		keep(os.NewSyscallError("close", r.np.closeUnattached(r.fd)))
		r.fd = -1
	}
	r.wakeMu.Lock()
	r.wakeGone = true
	if r.wakeFd >= 0 {
		keep(os.NewSyscallError("close", unix.Close(r.wakeFd)))
		r.wakeFd = -1
	}
	r.wakeMu.Unlock()
	return first
}
