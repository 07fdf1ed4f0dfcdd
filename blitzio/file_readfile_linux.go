package blitzio

import (
	"io/fs"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// resolveCached is RESOLVE_CACHED (Linux 5.12): openat2 fails with EAGAIN instead of
// doing I/O (or a network revalidation) to look a path up.
const resolveCached = 0x20

// readFileNoWaitOff is set once openat2 with RESOLVE_CACHED turned out to be missing
// (ENOSYS; EINVAL from a kernel before 5.12, which does not know the flag; EPERM from a
// seccomp filter): ReadFile and OpenFile stop trying the worker's path.
var readFileNoWaitOff atomic.Bool

// openat2Probe decides readFileNoWaitOff once, with an open that cannot fail for any
// other reason (O_PATH of "/"). The errors of later calls then belong to their own
// arguments: EINVAL from O_DIRECT on a file system without it, EPERM from an immutable
// file opened for writing, a name holding a NUL byte. Those calls go to the pool, which
// reports os's error; they must not turn the worker's path off for every other file.
var openat2Probe sync.Once

// noWaitOpenUsable reports whether openat2 with RESOLVE_CACHED works here.
func noWaitOpenUsable() bool {
	openat2Probe.Do(func() {
		how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolveCached}
		fd, err := unix.Openat2(unix.AT_FDCWD, "/", &how)
		for err == unix.EINTR {
			fd, err = unix.Openat2(unix.AT_FDCWD, "/", &how)
		}
		switch err {
		case nil:
			unix.Close(fd)
		case unix.EAGAIN: // works; "/" was merely not cached
		default:
			readFileNoWaitOff.Store(true)
		}
	})
	return !readFileNoWaitOff.Load()
}

// readFileNoWait reads a whole regular file on the calling worker when that cannot
// block: the file is on a local file system (localFS: a network or FUSE file system's
// open is a round trip to a server), the path is resolved from the kernel's caches
// only (openat2 RESOLVE_CACHED), its type and size come from statx without syncing with
// a remote server (AT_STATX_DONT_SYNC), and every read is served from the page cache
// (preadv2 RWF_NOWAIT). It reports ok = false when any of these would have to wait (or
// the file is not a regular file: a FIFO's open waits for a writer, and os.ReadFile
// must see that); the caller then does the whole read on the blocking pool. A missing
// file is reported at once, as os.ReadFile reports it.
func readFileNoWait(name string) (data []byte, ok bool, err error) {
	if !noWaitOpenUsable() {
		return nil, false, nil
	}
	var stx unix.Statx_t
	fd, err := openCachedRegular(name, 0, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, unix.STATX_SIZE, &stx)
	if fd < 0 {
		return nil, err != nil, err
	}
	defer unix.Close(fd)
	// The size is the one statx saw through the O_PATH descriptor, a hint only: the
	// file opened is the one checked, but it may have grown or shrunk since (and a
	// rename over the name since leaves it the old file, as if ReadFile had run just
	// before), so the loop below takes a short read as the end of the file only where
	// it cannot be anything else (see there).
	sizeSeen := int64(stx.Size)
	size := int(stx.Size)
	if int64(size) != int64(stx.Size) || size < 0 {
		return nil, false, nil
	}
	size++
	if size < 512 {
		size = 512
	}
	data = make([]byte, 0, size)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		want := cap(data) - len(data)
		n, errno := preadNoWait(fd, data[len(data):cap(data)], int64(len(data)))
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EOPNOTSUPP || errno == unix.ENOSYS:
			return nil, false, nil // this file system has no non-blocking reads
		case errno != 0: // EAGAIN: not in the page cache; the rest: os's form, from the pool
			return nil, false, nil
		case n == 0:
			return data, true, nil
		}
		data = data[:len(data)+n]
		if n < want && int64(len(data)) >= sizeSeen && sizeSeen > 0 && len(data)%pageSize != 0 {
			// A short read that reaches the size statx reported, and ends inside a
			// page, is the end of the file: the read of 0 that os.ReadFile makes to
			// see it (a system call in seven here) would only confirm it. Bytes
			// appended since the statx are left out, as they would be by a ReadFile
			// that ran a moment earlier. A short read that ends on a page boundary
			// proves nothing: RWF_NOWAIT stops at the first page not in the page
			// cache, and the file may have grown since statx saw it (rewritten in
			// place, its first pages only cached: ending there would return a torn
			// mix). A size of 0 proves nothing either (procfs
			// reports 0 for files with content). Those files are read on, until a read
			// of 0 or a miss that sends the work to the pool.
			return data, true, nil
		}
	}
}

// pageSize is the page cache's unit: a read with RWF_NOWAIT stops at a page boundary.
var pageSize = os.Getpagesize()

// openCached opens name with flags, resolving the path from the kernel's caches only
// (RESOLVE_CACHED). It returns the descriptor, or -1 and the error os.ReadFile would
// report for a name that does not resolve (a *fs.PathError), or -1 and nil when the
// caller must leave the work to the pool (not all cached, or no openat2 here).
func openCached(name string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags), Resolve: resolveCached}
	fd, err := unix.Openat2(unix.AT_FDCWD, name, &how)
	for err == unix.EINTR {
		fd, err = unix.Openat2(unix.AT_FDCWD, name, &how)
	}
	switch err {
	case nil:
		return fd, nil
	case unix.ENOENT, unix.ENOTDIR, unix.EACCES, unix.ELOOP, unix.ENAMETOOLONG:
		return -1, &fs.PathError{Op: "open", Path: name, Err: err}
	case unix.ENOSYS:
		readFileNoWaitOff.Store(true) // a seccomp filter installed since the probe
		return -1, nil
	default: // EAGAIN: not all cached; EINVAL, EPERM...: this call's own, see openat2Probe
		return -1, nil
	}
}

// openCachedRegular opens name with flags on the calling worker if that cannot block: a
// regular file (its type read first through an O_PATH descriptor, with pathFlags, which
// opens nothing: opening a FIFO, even non-blocking, would pair with a writer waiting in
// its open and then hang up on it) of a local file system (localFS), its path resolved
// from the kernel's caches only (openCached). stx receives the statx of the O_PATH
// descriptor with the type, the mount id and mask. The file is then opened through that
// descriptor (reopenPath), not by name again. It returns the descriptor, or -1 and the
// *fs.PathError of a name that does not resolve, or -1 and nil when the pool must do
// the open (the name is not a local regular file, or an open could wait).
func openCachedRegular(name string, pathFlags, flags, mask int, stx *unix.Statx_t) (int, error) {
	pathFD, err := openCached(name, unix.O_PATH|unix.O_CLOEXEC|pathFlags)
	if pathFD < 0 {
		return -1, err
	}
	defer unix.Close(pathFD)
	serr := unix.Statx(pathFD, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE|statxMount|mask, stx)
	if serr != nil || stx.Mode&unix.S_IFMT != unix.S_IFREG || !localFS(pathFD, stx) {
		return -1, nil
	}
	if h := openRegularHook.Load(); h != nil {
		(*h)(name)
	}
	return reopenPath(pathFD, flags), nil
}

// reopenPath opens the file an O_PATH descriptor refers to with flags, through its
// /proc/self/fd entry: the very file whose type was checked, whatever the name is by
// now. Opening the name again would open whatever a rename put there in between, and
// opening a FIFO, even non-blocking, pairs with a writer waiting in its open; closing
// it then hangs up on that writer. The walk goes through procfs only, held in memory,
// and the magic link hands the open the checked file without a look at its path; so
// this open waits no more than the first one did. O_NOFOLLOW is left out (the O_PATH
// open honoured it; here it would refuse the magic link itself). It returns -1 for any
// failure (no /proc mounted, a permission the pool's os.OpenFile will report in its
// own form): the pool then opens the name.
func reopenPath(pathFD, flags int) int {
	var buf [32]byte
	path := strconv.AppendInt(append(buf[:0], "/proc/self/fd/"...), int64(pathFD), 10)
	for {
		fd, err := unix.Openat(unix.AT_FDCWD, string(path), flags&^unix.O_NOFOLLOW, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1
		}
		return fd
	}
}

// openRegularHook, set by tests only, runs in openCachedRegular between the look at the
// name's type and the open: the window in which the name may be replaced.
var openRegularHook atomic.Pointer[func(name string)]

// unixFadviseDontNeed drops fd's clean pages from the page cache (tests use it to make
// reads miss).
func unixFadviseDontNeed(fd int) error { return unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED) }

// statxMount asks statx for the file's mount id, unique for the boot where the kernel
// has STATX_MNT_ID_UNIQUE (6.8), else the reusable one (5.8).
const statxMount = unix.STATX_MNT_ID | unix.STATX_MNT_ID_UNIQUE

// zfsSuperMagic is ZFS's f_type (not among x/sys's constants).
const zfsSuperMagic = 0x2fc12fc1

// localMounts caches localFS's answer by mount id (uint64 -> bool): a statfs per mount,
// not per open. Ids from STATX_MNT_ID (which the kernel may reuse for a later mount)
// are kept apart from unique ones by their top bit.
var localMounts sync.Map

// localFS reports whether the file behind pathFD (an O_PATH descriptor, whose statx
// with statxMount is stx) is on a local, kernel-resident file system, where opening a
// cached path and closing a descriptor do not wait for a server: ext4, XFS, Btrfs, F2FS,
// bcachefs, ZFS, exFAT, FAT, tmpfs, ramfs, and overlayfs (whose layers are taken to be
// local, as in containers). Anything else (NFS, SMB, Ceph, 9p, FUSE, ...) makes the
// open or the close a round trip, which RESOLVE_CACHED does not prevent: those go to
// the blocking pool.
func localFS(pathFD int, stx *unix.Statx_t) bool {
	var key uint64
	switch {
	case stx.Mask&unix.STATX_MNT_ID_UNIQUE != 0:
		key = stx.Mnt_id &^ (1 << 63)
	case stx.Mask&unix.STATX_MNT_ID != 0:
		key = stx.Mnt_id | 1<<63
	default:
		return fsTypeLocal(pathFD) // no mount id (before 5.8): ask every time
	}
	if v, ok := localMounts.Load(key); ok {
		return v.(bool)
	}
	local := fsTypeLocal(pathFD)
	localMounts.Store(key, local)
	return local
}

func fsTypeLocal(fd int) bool {
	var st unix.Statfs_t
	if unix.Fstatfs(fd, &st) != nil {
		return false
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC,
		unix.F2FS_SUPER_MAGIC, unix.BCACHEFS_SUPER_MAGIC, zfsSuperMagic,
		unix.EXFAT_SUPER_MAGIC, unix.MSDOS_SUPER_MAGIC, unix.TMPFS_MAGIC,
		unix.RAMFS_MAGIC, unix.OVERLAYFS_SUPER_MAGIC:
		return true
	}
	return false
}

// openNoWaitFlags are the open flags openNoWait handles: an access mode and flags that
// change nothing on disk. O_CREAT, O_TRUNC, O_EXCL and O_TMPFILE write metadata (a
// journal commit may wait), and anything unknown is left to os.OpenFile on the pool.
const openNoWaitFlags = unix.O_ACCMODE | unix.O_APPEND | unix.O_CLOEXEC | unix.O_NOFOLLOW |
	unix.O_NOATIME | unix.O_SYNC | unix.O_DSYNC | unix.O_DIRECT | unix.O_LARGEFILE | unix.O_NOCTTY

// openNoWait opens an existing regular file on the calling worker when that cannot
// block, as readFileNoWait does for its open: a local file system, a path resolved
// from the kernel's caches only, and O_NONBLOCK on the open so that a file lease held
// elsewhere fails the open instead of making it wait for the lease to be broken. A
// FIFO or device (whose open may wait) is never opened here: its type is read first
// through an O_PATH descriptor. It returns the *os.File with what the ring path needs
// to know (a regular file; O_APPEND from flag), ok = false when the pool must do the
// open (then the error is nil), or the *fs.PathError os.OpenFile gives for a name that
// does not resolve.
func openNoWait(name string, flag int) (f *os.File, fd int, ok bool, err error) {
	if flag&^openNoWaitFlags != 0 || !noWaitOpenUsable() {
		return nil, -1, false, nil
	}
	var stx unix.Statx_t
	fd, err = openCachedRegular(name, flag&unix.O_NOFOLLOW, flag|unix.O_CLOEXEC|unix.O_NONBLOCK, 0, &stx)
	if fd < 0 {
		return nil, -1, err != nil, err
	}
	// The file opened is the one whose type was checked (reopenPath); the File's
	// ring path relies on a regular file, so its type is confirmed on the descriptor
	// itself, which costs one fstat.
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, -1, false, nil
	}
	// O_NONBLOCK served the open only: a File's ring reads would fail with EAGAIN
	// on it. F_SETFL sets exactly the status flags the caller asked for.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flag&(unix.O_APPEND|unix.O_DIRECT|unix.O_NOATIME|unix.O_DSYNC|unix.O_SYNC)); err != nil {
		unix.Close(fd)
		return nil, -1, false, nil
	}
	return os.NewFile(uintptr(fd), name), fd, true, nil
}
