//go:build !linux

package blitzio

import (
	"syscall"

	"github.com/blitzgo/blitz/blitzio/internal/poller"
)

// Outside Linux there is no completion-based file I/O: every File operation runs on the
// blocking pool. These stand-ins keep File's code the same on every platform.

type ringFiles struct{}

type ringOp struct{}

func fileRing(*Context) *ringFiles { return nil }

func (*ringFiles) start(*ioDriver, *fileRefs, int, bool, bool, []byte, int, int64) (*ringOp, error) {
	return nil, errDriverClosed
}

func (*ringOp) poll(*Context) (int, error, bool) { return 0, errDriverClosed, true }
func (*ringOp) bytes() []byte                    { return nil }
func (*ringOp) release()                         {}
func (*ringOp) drop()                            {}
func (*ringOp) detach()                          {}

func (d *ioDriver) completeOp(_ poller.Event, buf []Waker) []Waker { return buf }

func ringFallback(error) bool { return true }

func ringTarget(syscall.RawConn) (int, bool, bool, bool, bool) { return -1, false, false, false, false }

func isPermanentRingErr(error) bool { return true }
