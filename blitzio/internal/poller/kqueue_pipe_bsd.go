//go:build netbsd || openbsd

package poller

import (
	"os"

	"golang.org/x/sys/unix"
)

// kqueueWaker wakes a kqueue through a non-blocking pipe registered for reading (these
// systems' x/sys has no EVFILT_USER). The read end is level-triggered, so a wake written
// before the Poll starts is seen by it.
type kqueueWaker struct {
	r, w int
}

func (k *kqueueWaker) init(kq int) error {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return os.NewSyscallError("pipe2", err)
	}
	k.r, k.w = fds[0], fds[1]
	var ev [1]unix.Kevent_t
	unix.SetKevent(&ev[0], k.r, unix.EVFILT_READ, unix.EV_ADD)
	if _, err := unix.Kevent(kq, ev[:], nil, nil); err != nil {
		k.close()
		return os.NewSyscallError("kevent", err)
	}
	return nil
}

func (k *kqueueWaker) wake(int) error {
	_, err := unix.Write(k.w, []byte{1})
	if err != nil && err != unix.EAGAIN { // EAGAIN: the pipe is full, so readable anyway
		return os.NewSyscallError("write", err)
	}
	return nil
}

func (k *kqueueWaker) isWake(ev *unix.Kevent_t) bool {
	return ev.Filter == unix.EVFILT_READ && int(ev.Ident) == k.r
}

func (k *kqueueWaker) drain() {
	var buf [64]byte
	for {
		if n, _ := unix.Read(k.r, buf[:]); n <= 0 {
			return
		}
	}
}

func (k *kqueueWaker) close() {
	unix.Close(k.r)
	unix.Close(k.w)
}
