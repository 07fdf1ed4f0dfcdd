//go:build linux

package poller

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// uringBufGroup is the buffer group id of the one provided-buffer ring.
const uringBufGroup = 0

// uringBufRing is a provided-buffer ring (IORING_REGISTER_PBUF_RING, Linux 5.19): the
// kernel takes a buffer from it when a Recv's data arrives, so a waiting receive holds
// no memory. Both the ring and the buffers are anonymous mappings, outside the Go heap:
// the garbage collector can neither move nor free them while the kernel writes.
//
// Every buffer is either in the ring (the kernel's) or held by the caller between the
// completion that names it and Release. There are as many ring entries as buffers, so
// the ring never overflows.
type uringBufRing struct {
	mu      sync.Mutex
	ringMem []byte // entries * 16 bytes of struct io_uring_buf
	bufMem  []byte // entries * size bytes of buffers
	entries uint32
	mask    uint32
	size    int
	tail    uint16 // our copy of the ring's tail
	bid0    uint16 // the value in bufs[0].bid, which shares a 32-bit word with the tail
	held    []bool // buffers owned by the caller
	closed  bool
	leak    bool // set by Close when the kernel may still write: close without unmapping
}

// newUringBufRing maps and registers a ring of n (a power of two) buffers of size bytes.
// Its error wraps ErrUnsupported whenever the kernel refuses the registration (EINVAL
// from a kernel without buffer rings, but also ENOMEM and the like, wrapped with it):
// NewIOUringConfig then goes on without ProvidedBuffers rather than fail.
func newUringBufRing(ringFd int, n uint32, size int) (*uringBufRing, error) {
	b := &uringBufRing{entries: n, mask: n - 1, size: size, held: make([]bool, n)}
	ringBytes := int(n) * uringSizeofBuf
	if pg := os.Getpagesize(); ringBytes%pg != 0 {
		ringBytes += pg - ringBytes%pg
	}
	var err error
	if b.ringMem, err = unix.Mmap(-1, 0, ringBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	if b.bufMem, err = unix.Mmap(-1, 0, int(n)*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != nil {
		unix.Munmap(b.ringMem)
		return nil, os.NewSyscallError("mmap", err)
	}
	reg := uringBufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&b.ringMem[0]))), ringEntries: n, bgid: uringBufGroup}
	if errno := uringRegister(ringFd, uringRegisterPbufRing, unsafe.Pointer(&reg), 1); errno != 0 {
		unix.Munmap(b.ringMem)
		unix.Munmap(b.bufMem)
		return nil, fmt.Errorf("%w: io_uring_register(IORING_REGISTER_PBUF_RING): %w", ErrUnsupported, os.NewSyscallError("io_uring_register", errno))
	}
	for id := range n {
		b.putLocked(uint16(id))
	}
	b.publishLocked()
	return b, nil
}

func (b *uringBufRing) entry(pos uint16) *uringBuf {
	return (*uringBuf)(unsafe.Pointer(&b.ringMem[uintptr(uint32(pos)&b.mask)*uringSizeofBuf]))
}

// putLocked writes buffer id into the next ring entry (not yet visible to the kernel).
func (b *uringBufRing) putLocked(id uint16) {
	e := b.entry(b.tail)
	e.addr = uint64(uintptr(unsafe.Pointer(&b.bufMem[int(id)*b.size])))
	e.len = uint32(b.size)
	if uint32(b.tail)&b.mask == 0 {
		b.bid0 = id // stored with the tail by publishLocked
	} else {
		e.bid = id
	}
	b.tail++
}

// publishLocked makes the entries written so far visible to the kernel. The ring's tail
// is the 16-bit field overlaying bufs[0].resv; Go has no 16-bit atomic store, so the
// store covers the aligned 32-bit word holding bufs[0].bid and the tail, and writes
// bufs[0].bid with the value it already has (or the one putLocked just chose for it:
// the kernel reads entry 0 only after a tail that covers it).
func (b *uringBufRing) publishLocked() {
	w := [2]uint16{b.bid0, b.tail} // native order: bid at offset 12, tail at 14
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b.ringMem[uringBufRingBid0Offset])), *(*uint32)(unsafe.Pointer(&w)))
}

// taken records that a completion handed buffer id to the caller.
func (b *uringBufRing) taken(id int32) {
	b.mu.Lock()
	if uint32(id) < b.entries {
		b.held[id] = true
	}
	b.mu.Unlock()
}

func (b *uringBufRing) checkID(what string, id int32) {
	if id < 0 || uint32(id) >= b.entries {
		panic(fmt.Sprintf("poller: io_uring %s: buffer id %d out of range [0, %d)", what, id, b.entries))
	}
}

func (b *uringBufRing) buffer(id int32, n int) []byte {
	b.checkID("Buffer", id)
	if n < 0 || n > b.size {
		panic(fmt.Sprintf("poller: io_uring Buffer: n = %d out of range [0, %d]", n, b.size))
	}
	b.mu.Lock()
	closed, held := b.closed, b.held[id]
	b.mu.Unlock()
	if closed {
		return nil
	}
	if !held {
		// The kernel may be writing into it: reading it would race the kernel.
		panic(fmt.Sprintf("poller: io_uring Buffer: buffer %d is not held (released, or never received)", id))
	}
	off := int(id) * b.size
	return b.bufMem[off : off+n : off+n]
}

func (b *uringBufRing) release(id int32) {
	b.checkID("Release", id)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	if !b.held[id] {
		panic(fmt.Sprintf("poller: io_uring Release: buffer %d is not held (released twice, or never received)", id))
	}
	b.held[id] = false
	b.putLocked(uint16(id))
	b.publishLocked()
}

// close unregisters the ring and unmaps the memory (unless leak is set).
func (b *uringBufRing) close(ringFd int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if b.leak {
		return nil
	}
	var first error
	if ringFd >= 0 {
		reg := uringBufReg{bgid: uringBufGroup}
		if errno := uringRegister(ringFd, uringUnregisterPbufRing, unsafe.Pointer(&reg), 1); errno != 0 {
			first = os.NewSyscallError("io_uring_register(IORING_UNREGISTER_PBUF_RING)", errno)
		}
	}
	for _, m := range []*[]byte{&b.ringMem, &b.bufMem} {
		if err := unix.Munmap(*m); err != nil && first == nil {
			first = os.NewSyscallError("munmap", err)
		}
		*m = nil
	}
	return first
}
