//go:build linux

package poller

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel's io_uring ABI (include/uapi/linux/io_uring.h), laid out by hand. The sizes
// are checked by TestUringABISizes: a wrong layout would have the kernel read garbage.

// Opcodes (enum io_uring_op).
const (
	uringOpNop         = 0
	uringOpPollAdd     = 6  // 5.1
	uringOpAccept      = 13 // 5.5
	uringOpAsyncCancel = 14 // 5.5
	uringOpSend        = 26 // 5.6
	uringOpRecv        = 27 // 5.6
	uringOpRead        = 22 // 5.6
	uringOpWrite       = 23 // 5.6
	uringOpMsgRing     = 40 // 5.18
	uringOpSocket      = 45 // 5.19, the release that also brought multishot accept
)

// Setup flags (io_uring_params.flags).
const (
	uringSetupCQSize    = 1 << 3
	uringSetupClamp     = 1 << 4
	uringSetupSubmitAll = 1 << 7
	uringSetupCoopTask  = 1 << 8 // IORING_SETUP_COOP_TASKRUN, 5.19
)

// Features (io_uring_params.features).
const (
	uringFeatSingleMmap = 1 << 0
	uringFeatNoDrop     = 1 << 1
	uringFeatRWCurPos   = 1 << 3
	uringFeatExtArg     = 1 << 8
)

// SQE flags.
const uringSQEBufferSelect = 1 << 5

// io_uring_enter flags.
const (
	uringEnterGetEvents = 1 << 0
	uringEnterExtArg    = 1 << 3
)

// SQ ring flags.
const uringSQCQOverflow = 1 << 1

// CQE flags.
const (
	uringCQEFBuffer     = 1 << 0
	uringCQEFMore       = 1 << 1
	uringCQEBufferShift = 16
)

// Per-opcode flags.
const (
	uringPollAddMulti     = 1 << 0 // POLL_ADD, in sqe.len
	uringAcceptMultishot  = 1 << 0 // ACCEPT, in sqe.ioprio
	uringProbeOpSupported = 1 << 0
)

// mmap offsets.
const (
	uringOffSQRing = 0
	uringOffCQRing = 0x8000000
	uringOffSQEs   = 0x10000000
)

// io_uring_register opcodes.
const (
	uringRegisterProbe       = 8
	uringRegisterPbufRing    = 22
	uringUnregisterPbufRing  = 23
	uringMaxEntries          = 32768 // IORING_MAX_ENTRIES
	uringMaxBufRingEntries   = 32768 // a buffer ring's entries are at most 1<<15
	uringProbeOps            = 256
	uringSizeofSQE           = 64
	uringSizeofCQE           = 16
	uringSizeofParams        = 120
	uringSizeofGeteventsArg  = 24
	uringSizeofProbe         = 16 + uringProbeOps*8
	uringSizeofBufReg        = 40
	uringSizeofBuf           = 16
	uringBufRingTailOffset   = 14 // the ring's tail overlays bufs[0].resv
	uringBufRingBid0Offset   = 12
	uringDefaultEntries      = 256
	uringDefaultBufferSize   = 4096
	uringDefaultBufferCount  = 256
	uringMaxBufferRegionSize = 1 << 30
)

// uringSQE is struct io_uring_sqe (64 bytes). Unions are named after the member this
// package uses.
type uringSQE struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64 // off / addr2
	addr        uint64 // addr / splice_off_in
	len         uint32
	opFlags     uint32 // poll32_events, msg_flags, accept_flags, cancel_flags, ...
	userData    uint64
	bufIndex    uint16 // buf_index / buf_group
	personality uint16
	fileIndex   uint32 // splice_fd_in / file_index
	addr3       uint64
	pad2        uint64
}

// uringCQE is struct io_uring_cqe (16 bytes; no CQE32).
type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

type uringSQOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type uringCQOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// uringParams is struct io_uring_params (120 bytes).
type uringParams struct {
	sqEntries    uint32
	cqEntries    uint32
	flags        uint32
	sqThreadCPU  uint32
	sqThreadIdle uint32
	features     uint32
	wqFd         uint32
	resv         [3]uint32
	sqOff        uringSQOffsets
	cqOff        uringCQOffsets
}

// uringGeteventsArg is struct io_uring_getevents_arg, passed with IORING_ENTER_EXT_ARG.
type uringGeteventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	pad       uint32
	ts        uint64 // *__kernel_timespec
}

// uringTimespec is struct __kernel_timespec: 64-bit fields on every architecture
// (unix.Timespec has 32-bit ones on 386 and arm).
type uringTimespec struct {
	sec  int64
	nsec int64
}

func uringTimespecOf(d time.Duration) uringTimespec {
	return uringTimespec{sec: int64(d / time.Second), nsec: int64(d % time.Second)}
}

type uringProbeOp struct {
	op    uint8
	resv  uint8
	flags uint16
	resv2 uint32
}

// uringProbe is struct io_uring_probe with room for every opcode a u8 can name.
type uringProbe struct {
	lastOp uint8
	opsLen uint8
	resv   uint16
	resv2  [3]uint32
	ops    [uringProbeOps]uringProbeOp
}

// uringBufReg is struct io_uring_buf_reg, the argument of IORING_REGISTER_PBUF_RING.
type uringBufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

// uringBuf is struct io_uring_buf, one entry of a provided-buffer ring.
type uringBuf struct {
	addr uint64
	len  uint32
	bid  uint16
	resv uint16
}

// The raw system calls. Pointers passed to them point at heap memory owned by the ring
// (or at locals for the duration of the call), so the garbage collector does not move
// them: Go's heap is non-moving, and a local whose address is converted in the call
// expression is kept alive and in place until the call returns.

// Fault injection for tests: when set, these replace the system calls below (a hook
// may call the real one, uringSetupSys, uringEnterSys or uringRegisterSys, and alter its
// arguments or result). Set only by tests, never while a Poller is in use elsewhere.
var (
	uringTestSetup    func(entries uint32, p *uringParams) (int, unix.Errno)
	uringTestEnter    func(fd int, toSubmit, minComplete, flags uint32, arg unsafe.Pointer, argSize uintptr) (int, unix.Errno)
	uringTestRegister func(fd int, opcode uint32, arg unsafe.Pointer, nrArgs uint32) unix.Errno
)

func uringSetup(entries uint32, p *uringParams) (int, unix.Errno) {
	if uringTestSetup != nil {
		return uringTestSetup(entries, p)
	}
	return uringSetupSys(entries, p)
}

func uringEnter(fd int, toSubmit, minComplete, flags uint32, arg unsafe.Pointer, argSize uintptr) (int, unix.Errno) {
	if uringTestEnter != nil {
		return uringTestEnter(fd, toSubmit, minComplete, flags, arg, argSize)
	}
	return uringEnterSys(fd, toSubmit, minComplete, flags, arg, argSize)
}

func uringRegister(fd int, opcode uint32, arg unsafe.Pointer, nrArgs uint32) unix.Errno {
	if uringTestRegister != nil {
		return uringTestRegister(fd, opcode, arg, nrArgs)
	}
	return uringRegisterSys(fd, opcode, arg, nrArgs)
}

func uringSetupSys(entries uint32, p *uringParams) (int, unix.Errno) {
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), 0
}

func uringEnterSys(fd int, toSubmit, minComplete, flags uint32, arg unsafe.Pointer, argSize uintptr) (int, unix.Errno) {
	n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(fd), uintptr(toSubmit),
		uintptr(minComplete), uintptr(flags), uintptr(arg), argSize)
	if errno != 0 {
		return 0, errno
	}
	return int(n), 0
}

func uringRegisterSys(fd int, opcode uint32, arg unsafe.Pointer, nrArgs uint32) unix.Errno {
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(fd), uintptr(opcode),
		uintptr(arg), uintptr(nrArgs), 0, 0)
	return errno
}

// bigEndian is true on the big-endian architectures, where the kernel reads
// sqe.poll32_events with its 16-bit halves swapped.
var bigEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 0
}()

// uringPollEvents encodes a poll mask for sqe.poll32_events.
func uringPollEvents(mask uint32) uint32 {
	if bigEndian {
		return mask<<16 | mask>>16
	}
	return mask
}
