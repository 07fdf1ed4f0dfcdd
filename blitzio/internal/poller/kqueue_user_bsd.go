//go:build darwin || freebsd || dragonfly

package poller

import (
	"os"

	"golang.org/x/sys/unix"
)

// kqueueWaker wakes a kqueue with an EVFILT_USER event (NOTE_TRIGGER), which needs no
// extra file descriptor. EV_CLEAR resets it when it is reported.
type kqueueWaker struct{}

const kqueueWakeIdent = 0

func (kqueueWaker) init(kq int) error {
	var ev [1]unix.Kevent_t
	unix.SetKevent(&ev[0], kqueueWakeIdent, unix.EVFILT_USER, unix.EV_ADD|unix.EV_CLEAR)
	if _, err := unix.Kevent(kq, ev[:], nil, nil); err != nil {
		return os.NewSyscallError("kevent", err)
	}
	return nil
}

func (kqueueWaker) wake(kq int) error {
	var ev [1]unix.Kevent_t
	unix.SetKevent(&ev[0], kqueueWakeIdent, unix.EVFILT_USER, 0)
	ev[0].Fflags = unix.NOTE_TRIGGER
	for {
		_, err := unix.Kevent(kq, ev[:], nil, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return os.NewSyscallError("kevent", err)
		}
		return nil
	}
}

func (kqueueWaker) isWake(ev *unix.Kevent_t) bool { return ev.Filter == unix.EVFILT_USER }

func (kqueueWaker) drain() {}

func (kqueueWaker) close() {}
