package blitzio

// JoinHandle is the handle of a spawned task. It is a Future[Result[T]], so another task
// can await it; Wait blocks a plain goroutine until the task finishes. A JoinHandle is a
// small value: copy it freely. Dropping every copy does not cancel the task (use Abort);
// Detach tells the runtime nobody will read the result. The zero JoinHandle is not a
// handle of any task; its methods panic.
type JoinHandle[T any] struct {
	c *core[T]
}

// Poll is ready when the task has finished: with its value, or with ErrCancelled if it
// was aborted or dropped by Shutdown, or with a *PanicError if its Poll panicked.
func (h JoinHandle[T]) Poll(cx *Context) (Result[T], bool) {
	if !cx.ConsumeBudget() {
		return Result[T]{}, false
	}
	c := h.c
	cur := c.state.v.Load()
	if life(cur) == stComplete {
		return h.result(), true
	}
	// Join-waker hand-off (Tokio's can_read_output): we may write joinWaker only while
	// JOIN_WAKER is clear; the completer reads it only after seeing JOIN_WAKER set. Each
	// CAS below fails if the task completed meanwhile, and then the output is ready.
	w := cx.Waker()
	if cur&flagJoinWaker != 0 {
		if c.joinWaker.WillWake(w) {
			return Result[T]{}, false
		}
		if !c.state.unsetJoinWaker() {
			return h.result(), true
		}
	}
	c.joinWaker = w
	if !c.state.setJoinWaker() {
		return h.result(), true
	}
	return Result[T]{}, false
}

func (h JoinHandle[T]) result() Result[T] {
	return Result[T]{Value: h.c.out, Err: h.c.err}
}

// Wait blocks the calling goroutine until the task finishes and returns its value or
// error. Call it from plain Go code; inside a task, await the handle instead.
func (h JoinHandle[T]) Wait() (T, error) {
	if life(h.c.state.v.Load()) == stComplete {
		return h.c.out, h.c.err
	}
	p := newParker()
	cx := &Context{waker: Waker{t: p}, budget: budgetPerPoll}
	for {
		cx.budget = budgetPerPoll
		if r, ok := h.Poll(cx); ok {
			return r.Value, r.Err
		}
		<-p.ch
	}
}

// Abort cancels the task: it is dropped at its next scheduling point (at once if it is
// waiting; after the current poll if it is running) and the handle reports ErrCancelled.
// A task that completes during the poll in progress keeps its result. Aborting a finished
// task does nothing. Safe from any goroutine.
func (h JoinHandle[T]) Abort() {
	if h.c.state.abort() {
		h.c.rt.schedule(&h.c.header, nil, false)
	}
}

// IsFinished reports whether the task has completed, failed or been cancelled.
func (h JoinHandle[T]) IsFinished() bool { return life(h.c.state.v.Load()) == stComplete }

// Detach gives up the handle: the task keeps running, and its result is released as soon
// as it finishes. Do not use the handle (or its copies) afterwards.
func (h JoinHandle[T]) Detach() {
	prev, ok := h.c.state.dropJoinInterest()
	if ok && (life(prev) == stComplete || refs(prev) == 1) {
		// The completer saw our interest and kept the output, or we hold the last
		// reference: release it now.
		h.c.vt.release()
	}
}
