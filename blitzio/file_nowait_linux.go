//go:build linux

package blitzio

import (
	"math"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readNoWait reads into p at off (off < 0: at the file offset, moving it) only if that
// cannot block: preadv2 with RWF_NOWAIT (Linux 4.14+) fails with EAGAIN instead of
// waiting for the disk or for a pipe writer. Data already in the page cache, the common
// case for hot files, is then read by the worker itself, with no hop to the blocking
// pool and no copy; everything else falls back to the pool. It reports whether it
// produced an outcome: (n, true), with n == 0 meaning end of file.
//
// The worker doing this system call is the exception to "only the I/O driver blocks in
// a system call" that RWF_NOWAIT makes safe: the call returns at once either way.
//
// The call uses b's descriptor number directly, not through os.File's RawConn (whose
// closure, pooled call record and extra frames cost about a tenth of a cached 4 KiB
// read): b.refs keeps the number from being closed, and reused by another open, while
// the call runs, as it does for the ring's operations (File.Close waits for it).
//
// cx is the Context of the poll making the read (nil off a runtime): a worker's read
// counts itself in that worker's shard of b.refs.
func readNoWait(cx *Context, b *blockingIO, p []byte, off int64) (int, bool) {
	nw := &b.nw
	if !nw.on || nw.off.Load() || len(p) == 0 {
		return 0, false
	}
	if off > math.MaxInt64-int64(len(p)) {
		// The kernel refuses a range past the largest offset with EINVAL, which below
		// means "this file cannot do it" and switches the worker's reads off for good:
		// leave this one call to the blocking path, which reports os's error.
		return 0, false
	}
	if nw.misses.Load() >= noWaitMissLimit && nw.skips.Add(1)%noWaitProbe != 0 {
		return 0, false // the last reads all missed: skip, save for a probe
	}
	shard := b.refs.shardFor(cx)
	if !b.refs.increfIn(shard) {
		return 0, false // closing: the pool reports os's error
	}
	if nw.plain && off >= 0 && len(p) <= rawReadMax && nw.trusted() {
		n, errno := nw.preadPlain(cx, b.fd, p, off)
		wakeRef(b.refs.decrefIn(shard))
		if errno != 0 {
			return 0, false // let the blocking path retry or report in os's form
		}
		return n, true
	}
	n, errno := preadNoWait(b.fd, p, off)
	wakeRef(b.refs.decrefIn(shard))
	switch errno {
	case 0:
		if nw.misses.Load() != 0 {
			nw.misses.Store(0)
		}
		if nw.plain {
			nw.countHit(n, len(p), off)
		}
		return n, true
	case unix.EAGAIN:
		if nw.misses.Load() < noWaitMissLimit {
			nw.misses.Add(1)
		}
		nw.resetCredit()
		return 0, false
	case unix.EOPNOTSUPP, unix.EINVAL, unix.ENOSYS, unix.ESPIPE:
		// This file (or kernel) does not do non-blocking reads: stop trying.
		nw.off.Store(true)
		return 0, false
	}
	return 0, false // EINTR, EIO...: let the blocking path retry or report in os's form
}

// rawReadMax is the largest non-blocking read made without telling the Go scheduler
// (RawSyscall6): with RWF_NOWAIT the call does not sleep for I/O, so it costs what
// copying the bytes costs, and up to this size that is a few microseconds at most,
// less than the scheduler's own bookkeeping around a system call (entersyscall and
// exitsyscall) is worth. Larger reads go through Syscall6, so that a long copy lets
// the scheduler hand the worker's P to other goroutines as any system call would.
const rawReadMax = 16 << 10

// Plain reads. preadv2 costs more in the kernel than pread64: it imports an iovec
// from user memory and reads through it, about 55 ns a read on the 2-core EPYC KVM
// guest we measure on (473 against 417 ns for a cached 4 KiB read), a sixth of a cached
// read; but only preadv2 takes RWF_NOWAIT. So a file that has shown it is in memory is
// trusted: once plainTrustHits non-blocking reads in a row found all their data in the
// page cache (see countHit), its positioned reads of up to rawReadMax bytes use a plain
// pread64. About one in plainTimeEvery of them on a worker is timed with the cycle
// counter (reading it costs about 9 ns; twice on every read would be 3% of a cached
// 4 KiB read). A timed read that took plainSlowCycles or more (10-50 us at TSC rates
// of 1-5 GHz, against a few microseconds for a cached read of that size) most likely
// waited for the disk: the file goes back to RWF_NOWAIT reads and must earn twice the
// trust as before (up to plainMaxDemotions doublings). The cost of the bet is that the
// worker waits for the disk on the few reads before a slow one is timed, as a
// goroutine calling os.File.ReadAt would (but holding its P, like any long poll).
// BLITZIO_FILEIO=nowait keeps every read on RWF_NOWAIT.
const (
	plainTrustHits    = 16
	plainMaxDemotions = 10
	plainSlowCycles   = 50_000
	plainTimeEvery    = 4
)

// pageGranule is the size every page-cache folio is a multiple of (and aligned to).
const pageGranule = 4096

// countHit counts a non-blocking read of want bytes at off that got n toward the file's
// trust. Only a read that got its whole range is a hit. A short one either reached the
// end of the file, which says nothing (no data, cached or not, lies past it), or found
// only the front of the range in the page cache: a miss, like EAGAIN. The second kind
// stops at a folio boundary, a multiple of pageGranule; a read that stops elsewhere
// was cut by the end of the file. At a boundary it may be either (a file whose size is
// a multiple of the granule), and is taken for a miss: trust is earned again. A read
// at the file position (off < 0) has no offset to tell by: neither.
func (nw *noWait) countHit(n, want int, off int64) {
	switch {
	case n == want:
		if nw.credit.Load() < plainTrustHits<<plainMaxDemotions {
			nw.credit.Add(1)
		}
	case n > 0 && off >= 0 && (off+int64(n))%pageGranule == 0:
		nw.resetCredit()
	}
}

// resetCredit starts the file's run of hits again after a miss (a load first: a file
// that keeps missing does not write the shared line on every read).
func (nw *noWait) resetCredit() {
	if nw.credit.Load() != 0 {
		nw.credit.Store(0)
	}
}

// trusted reports whether nw's file has earned plain reads. demotions never exceeds
// plainMaxDemotions (demote caps it); min keeps the shift in range regardless.
func (nw *noWait) trusted() bool {
	return nw.credit.Load() >= plainTrustHits<<min(nw.demotions.Load(), plainMaxDemotions)
}

// preadPlain is pread64(fd, p, off), timed on about one call in plainTimeEvery of cx's
// worker, picked at random (every call off a worker): a timed read that took
// plainSlowCycles or more (or a counter that went backwards), or an error, withdraws
// the file's trust, once.
//
// The pick is random, not every plainTimeEvery-th plain read of the worker: the count
// is the worker's, over all its files and tasks, and a fixed pattern of reads (a task
// reading three cold data pages and then a hot header page, say) would otherwise have
// the same reads timed every time, and never the ones that wait for the disk.
func (nw *noWait) preadPlain(cx *Context, fd int, p []byte, off int64) (int, unix.Errno) {
	timed := true
	if cx != nil && cx.w != nil {
		cx.w.plainReads++
		timed = (cx.w.rng.Next()>>32)%plainTimeEvery == 0
	}
	var t0 int64
	if timed {
		t0 = cycles()
	}
	r, _, e := unix.RawSyscall6(unix.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), uintptr(off), 0, 0)
	slow := false
	if timed {
		d := cycles() - t0
		slow = d >= plainSlowCycles || d < 0
	}
	if slow || e != 0 {
		nw.demote()
	}
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// demote withdraws nw's trust: back to RWF_NOWAIT reads, and twice the run of cached
// reads to earn it again, up to plainMaxDemotions doublings. Workers whose timed reads
// of one file were slow together demote it at once: the cap holds against them (a
// compare-and-swap, not a load then an add), since past it the threshold would exceed
// the highest credit readNoWait counts to and the file could never be trusted again.
func (nw *noWait) demote() {
	nw.credit.Store(0)
	for {
		d := nw.demotions.Load()
		if d >= plainMaxDemotions || nw.demotions.CompareAndSwap(d, d+1) {
			return
		}
	}
}

// directIO reports whether open flags ask for O_DIRECT.
func directIO(flag int) bool { return flag&unix.O_DIRECT != 0 }

// preadNoWait is preadv2(fd, [p], off, RWF_NOWAIT) (off -1: at the file position) with
// the iovec on the stack (x/sys's Preadv2 allocates its iovecs). p must not be empty.
func preadNoWait(fd int, p []byte, off int64) (int, unix.Errno) {
	var iov unix.Iovec
	iov.Base = &p[0]
	iov.SetLen(len(p))
	lo := uintptr(off)
	hi := uintptr(uint64(off) >> (unix.SizeofLong*8 - 1) >> 1)
	var (
		r uintptr
		e unix.Errno
	)
	if len(p) <= rawReadMax {
		r, _, e = unix.RawSyscall6(unix.SYS_PREADV2, uintptr(fd), uintptr(unsafe.Pointer(&iov)), 1, lo, hi, unix.RWF_NOWAIT)
	} else {
		r, _, e = unix.Syscall6(unix.SYS_PREADV2, uintptr(fd), uintptr(unsafe.Pointer(&iov)), 1, lo, hi, unix.RWF_NOWAIT)
	}
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// closeCannotBlock reports whether closing b's descriptor now cannot block: the file
// still has a name (the last close of an unlinked file frees its blocks, which may wait
// for the journal). Only asked for files closeInline allows: regular files of a local
// file system, opened for reading only. Called by Close after every operation let go of
// the descriptor.
func (b *blockingIO) closeCannotBlock() bool {
	var st unix.Stat_t
	return b.fd >= 0 && unix.Fstat(b.fd, &st) == nil && st.Nlink > 0
}
