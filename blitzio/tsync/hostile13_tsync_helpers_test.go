package tsync

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/blitzgo/blitz/blitzio"
)

// h13Ops reads a fuzz input as a stream of operation bytes and their arguments: an
// argument past the end reads as zero, so every input is a valid program.
type h13Ops struct {
	b []byte
	i int
}

func (o *h13Ops) more() bool { return o.i < len(o.b) }

func (o *h13Ops) next() int {
	if o.i >= len(o.b) {
		return 0
	}
	v := int(o.b[o.i])
	o.i++
	return v
}

// pick reads an argument and maps it to an index below n (n > 0).
func (o *h13Ops) pick(n int) int { return o.next() % n }

// h13Waker is the hand-made Context of one future under test: its waker counts wakes, and
// mark remembers the count at the future's last poll, so woken tells whether the waker
// ran since then.
type h13Waker struct {
	cx    *blitzio.Context
	wakes atomic.Int64
	mark  int64
}

func newH13Waker() *h13Waker {
	w := &h13Waker{}
	w.cx = blitzio.NewContext(nil, blitzio.WakerFunc(func() { w.wakes.Add(1) }))
	return w
}

// polled is called right before each Poll of the future.
func (w *h13Waker) polled() { w.mark = w.wakes.Load() }

// woken reports whether the waker ran since the last poll.
func (w *h13Waker) woken() bool { return w.wakes.Load() != w.mark }

// h13Panics runs f and returns the panic message, or "" if it did not panic.
func h13Panics(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
			if msg == "" {
				msg = "<empty panic>"
			}
		}
	}()
	f()
	return ""
}

// h13Trace records the operations a fuzz input ran, for the failure message: a model
// test that fails at op 40 is read with the ops before it.
type h13Trace struct{ b strings.Builder }

func (t *h13Trace) add(format string, args ...any) {
	if t.b.Len() < 8000 {
		fmt.Fprintf(&t.b, format+"\n", args...)
	}
}

func (t *h13Trace) String() string { return t.b.String() }
