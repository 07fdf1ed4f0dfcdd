package blitzio

import (
	"errors"
	"testing"
	"time"
)

// panicDropFuture never completes, and its Drop panics.
type panicDropFuture struct{ polled chan struct{} }

func (f *panicDropFuture) Poll(cx *Context) (int, bool) {
	select {
	case f.polled <- struct{}{}:
	default:
	}
	return 0, false
}
func (f *panicDropFuture) Drop() { panic("drop failed") }

// TestBlockOnDropPanicAfterClose: when the runtime closes under a BlockOn, the future is
// dropped and BlockOn returns ErrRuntimeClosed; a Drop that panics (an Async function
// with a panicking deferred call, say) is reported joined to that error, as a *PanicError
// with InDrop set, instead of escaping BlockOn as a raw panic.
func TestBlockOnDropPanicAfterClose(t *testing.T) {
	rt, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := &panicDropFuture{polled: make(chan struct{}, 1)}
	type out struct {
		err error
		p   any
	}
	res := make(chan out, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				res <- out{p: p}
			}
		}()
		_, err := BlockOn(rt, Future[int](f))
		res <- out{err: err}
	}()
	<-f.polled
	rt.Close()
	select {
	case o := <-res:
		if o.p != nil {
			t.Fatalf("BlockOn panicked with %v; want ErrRuntimeClosed joined with the Drop's panic", o.p)
		}
		var pe *PanicError
		if !errors.Is(o.err, ErrRuntimeClosed) || !errors.As(o.err, &pe) || !pe.InDrop || pe.Value != "drop failed" {
			t.Fatalf("BlockOn returned %v; want ErrRuntimeClosed joined with a *PanicError (InDrop) of the Drop", o.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("BlockOn did not return after Close")
	}
}

// panicPollDropFuture panics in Poll and in Drop.
type panicPollDropFuture struct{}

func (panicPollDropFuture) Poll(cx *Context) (int, bool) { panic("poll failed") }
func (panicPollDropFuture) Drop()                        { panic("drop failed") }

// TestBlockOnDropPanicAfterPollPanic: a future whose Poll panics is dropped; a panic of
// that Drop is joined to the Poll's *PanicError, not raised in its place.
func TestBlockOnDropPanicAfterPollPanic(t *testing.T) {
	rt := fileRT(t)
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("BlockOn panicked with %v; want the Poll's panic joined with the Drop's", p)
			}
		}()
		_, err = BlockOn(rt, Future[int](panicPollDropFuture{}))
	}()
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "poll failed" {
		t.Fatalf("BlockOn returned %v; want the Poll's *PanicError", err)
	}
	found := false
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		if errors.As(e, &pe) && pe.InDrop && pe.Value == "drop failed" {
			found = true
		}
	}
	if !found {
		t.Fatalf("BlockOn returned %v; want the Drop's panic joined (InDrop)", err)
	}
}
