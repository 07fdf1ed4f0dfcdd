package blitzio

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestFileReadLoopYields: File.PollRead, whose reads of cached bytes (the page cache on
// Linux, the read-ahead buffer everywhere) are ready at once, spends the task's
// cooperative budget like any leaf, so a task that reads a file to its end in small
// pieces yields to the others every so often instead of holding the worker for the whole
// file (which also kept a Timeout around the loop from firing).
func TestFileReadLoopYields(t *testing.T) {
	rt := fileRT(t)
	const size = 64 << 10
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, rt, Open(name))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	f := r.Value
	defer run(t, rt, f.Close())
	p := make([]byte, 64)
	total, polls, pending := 0, 0, 0
	run(t, rt, PollFn(func(cx *Context) (struct{}, bool) {
		polls++
		for {
			res, ok := f.PollRead(cx, p)
			if !ok {
				pending++
				return struct{}{}, false
			}
			if res.Err == io.EOF {
				return struct{}{}, true
			}
			if res.Err != nil {
				t.Error(res.Err)
				return struct{}{}, true
			}
			total += res.Value
		}
	}))
	if total != size {
		t.Fatalf("read %d bytes, want %d", total, size)
	}
	if reads := size / len(p); polls < reads/(2*budgetPerPoll) {
		t.Fatalf("%d reads of cached bytes took %d polls: File.PollRead ignores the cooperative budget (about %d ready reads per poll)",
			reads, polls, budgetPerPoll)
	}
}
