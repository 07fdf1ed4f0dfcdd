package benchmarks

import (
	"flag"
	"testing"
)

// TestHostile9OnceLatchSetWaitReusesBothSides: OnceLatchSetWait's ours reuses one latch
// (Reset) across iterations; a sync.WaitGroup is just as reusable once Wait returns,
// so the baseline must reuse one too. Declared inside the loop, the WaitGroup escaped
// to the heap every iteration (captured by the goroutine): one allocation per
// iteration that only the baseline paid (RESULTS.md: ours 1 alloc/op, WaitGroup 2). Both
// sides then allocate only the goroutine's closure. Allocation counts, not times, are
// compared: they do not depend on the machine's speed.
func TestHostile9OnceLatchSetWaitReusesBothSides(t *testing.T) {
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	if err := bt.Value.Set("2000x"); err != nil {
		t.Fatal(err)
	}
	defer bt.Value.Set(old)
	var c *Case
	for _, lc := range lockfreeCases(Config{}) {
		if lc.Name == "OnceLatchSetWait" {
			c = &lc
		}
	}
	if c == nil {
		t.Fatal("no OnceLatchSetWait case")
	}
	ours := testing.Benchmark(c.Ours.Bench)
	if ours.N == 0 {
		t.Fatal("ours failed")
	}
	for _, b := range c.Baselines {
		if b.Name != "sync.WaitGroup" {
			continue
		}
		r := testing.Benchmark(b.Bench)
		if r.N == 0 {
			t.Fatal("the WaitGroup baseline failed")
		}
		if r.AllocsPerOp() > ours.AllocsPerOp() {
			t.Errorf("sync.WaitGroup baseline: %d allocs/op (%d over %d iterations), ours %d: the baseline allocates what ours reuses",
				r.AllocsPerOp(), r.MemAllocs, r.N, ours.AllocsPerOp())
		}
		return
	}
	t.Fatal("OnceLatchSetWait has no sync.WaitGroup baseline")
}
