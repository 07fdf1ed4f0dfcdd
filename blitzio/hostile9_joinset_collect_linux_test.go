//go:build linux

package blitzio

import (
	"os"
	"path/filepath"
	"testing"
)

// chunkReader reads from a File at most n bytes at a time, so that collecting a small
// file takes many reads.
type chunkReader struct {
	f     *File
	n     int
	reads int // reads that returned bytes
}

func (r *chunkReader) PollRead(cx *Context, p []byte) (Result[int], bool) {
	res, ok := r.f.PollRead(cx, p[:min(len(p), r.n)])
	if ok && res.Value > 0 {
		r.reads++
	}
	return res, ok
}

// The loop that collects a child's stdout and stderr (Output) spent a unit of the
// cooperative budget for each read, on top of the unit File.PollRead spends itself for
// bytes it has at once: a task collecting output yielded twice as often as one reading
// the same pipe with File.PollRead. Each read must spend once: with bytes always ready
// (a file in the page cache, read without blocking), a poll makes budgetPerPoll reads
// before it yields, not half as many.
func TestHostile9CollectSpendsBudgetOncePerRead(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	const size = 32 << 10
	name := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(name, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, rt, Open(name))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	f := r.Value
	defer run(t, rt, f.Close())
	cr := &chunkReader{f: f, n: 16}
	c := &collect{r: cr}
	polls, maxReads := 0, 0
	h := Spawn(rt, PollFn(func(cx *Context) (struct{}, bool) {
		polls++
		before := cr.reads
		done := c.poll(cx)
		maxReads = max(maxReads, cr.reads-before)
		return struct{}{}, done
	}))
	if _, err := waitHandleFor(t, h, "the collect loop"); err != nil {
		t.Fatal(err)
	}
	if c.err != nil || len(c.buf) != size {
		t.Fatalf("collected %d bytes (error %v), want %d", len(c.buf), c.err, size)
	}
	if !f.b.nw.on || f.b.nw.off.Load() {
		t.Skip("this kernel or file system does not read without blocking (RWF_NOWAIT): reads are not ready at once, so the budget is not what limits a poll")
	}
	if maxReads <= budgetPerPoll/2 {
		t.Fatalf("at most %d reads of ready bytes per poll (%d polls for %d reads), want up to %d: the collect loop spends the budget twice per read",
			maxReads, polls, cr.reads, budgetPerPoll)
	}
}
