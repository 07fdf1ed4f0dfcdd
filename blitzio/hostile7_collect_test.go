package blitzio

import (
	"io"
	"testing"
)

// hostile7Firehose is an AsyncReader that is always ready: one byte per read, n reads,
// then end of file (a child that writes faster than the parent reads).
type hostile7Firehose struct{ n int }

func (f *hostile7Firehose) PollRead(cx *Context, p []byte) (Result[int], bool) {
	if f.n == 0 {
		return Result[int]{Err: io.EOF}, true
	}
	f.n--
	p[0] = 'x'
	return Result[int]{Value: 1}, true
}

// Output collects the child's streams with a loop that must spend the task's cooperative
// budget like any leaf: a child that keeps its pipe full (a firehose such as `yes`, or
// any large output read faster through the page-cache path than the pool) must not hold
// the worker for the whole output, starving the tasks queued behind it and keeping a
// Timeout around Output from ever firing.
func TestHostile7OutputCollectYields(t *testing.T) {
	rt := fileRT(t)
	const reads = 100_000
	c := collect{r: &hostile7Firehose{n: reads}}
	polls := 0
	run(t, rt, PollFn(func(cx *Context) (struct{}, bool) {
		polls++
		if !c.poll(cx) {
			return struct{}{}, false
		}
		return struct{}{}, true
	}))
	if len(c.buf) != reads || c.err != nil {
		t.Fatalf("collected %d bytes, %v; want %d", len(c.buf), c.err, reads)
	}
	if polls < reads/(2*budgetPerPoll) {
		t.Fatalf("%d always-ready reads took %d polls: the collecting loop ignores the cooperative budget (about %d ready reads per poll)",
			reads, polls, budgetPerPoll)
	}
}
