//go:build unix

// The blitz suite needs getrusage for its idle-cost case, hence the unix build tag.

package benchmarks

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/blitzgo/blitz/blitz"
)

// The blitz suite measures the fork-join pool against what a Go programmer would
// otherwise write (a goroutine and a WaitGroup per fork, errgroup) and against plain
// sequential code. The bodies mirror blitz/bench_test.go.

func init() {
	Register(Suite{
		Name:  "blitz",
		Title: "blitz fork-join pool: fork/join cost, tree sums, external calls, idle cost",
		Cases: blitzCases,
	})
}

// --- shapes ---------------------------------------------------------------------------

func bzFibSeq(n int) int {
	if n < 2 {
		return n
	}
	return bzFibSeq(n-1) + bzFibSeq(n-2)
}

// bzFibForks is the number of forks of fib(n) with a fork at every call: fib(n+1) - 1.
func bzFibForks(n int) float64 { return float64(bzFibSeq(n+1) - 1) }

var bzFibJob blitz.Job[int, int]

// bzFib forks at every call and joins with Future.Stolen: a fork nobody stole is run by
// a direct call.
func bzFib(t *blitz.Task, n int) int {
	if n < 2 {
		return n
	}
	f := bzFibJob.Fork(t, bzFib, n-1)
	b := bzFib(t, n-2)
	a, ok := f.Stolen(t)
	if !ok {
		a = bzFib(t, n-1)
	}
	return a + b
}

var bzFibJoinJob blitz.Job[int, int]

// bzFibJoin is bzFib with Future.Join (the fork runs through its function value).
func bzFibJoin(t *blitz.Task, n int) int {
	if n < 2 {
		return n
	}
	f := bzFibJoinJob.Fork(t, bzFibJoin, n-1)
	b := bzFibJoin(t, n-2)
	return f.Join(t) + b
}

func bzFibGoroutine(n int) int {
	if n < 2 {
		return n
	}
	var wg sync.WaitGroup
	var a int
	wg.Add(1)
	go func() { defer wg.Done(); a = bzFibGoroutine(n - 1) }()
	b := bzFibGoroutine(n - 2)
	wg.Wait()
	return a + b
}

func bzFibErrgroup(n int) int {
	if n < 2 {
		return n
	}
	var g errgroup.Group
	var a int
	g.Go(func() error { a = bzFibErrgroup(n - 1); return nil })
	b := bzFibErrgroup(n - 2)
	_ = g.Wait()
	return a + b
}

type bzNode struct {
	val         int
	left, right *bzNode
}

// bzTree builds a balanced tree of n nodes in depth-first order.
func bzTree(n int, v *int) *bzNode {
	if n == 0 {
		return nil
	}
	*v++
	nd := &bzNode{val: *v % 1000}
	rest := n - 1
	nd.left = bzTree(rest/2, v)
	nd.right = bzTree(rest-rest/2, v)
	return nd
}

func bzSumSeq(n *bzNode) int {
	if n == nil {
		return 0
	}
	return n.val + bzSumSeq(n.left) + bzSumSeq(n.right)
}

var bzSumJob blitz.Job[*bzNode, int]

// bzSum joins at every node.
func bzSum(t *blitz.Task, n *bzNode) int {
	if n == nil {
		return 0
	}
	f := bzSumJob.Fork(t, bzSum, n.right)
	l := bzSum(t, n.left)
	r, ok := f.Stolen(t)
	if !ok {
		r = bzSum(t, n.right)
	}
	return n.val + l + r
}

var bzEmptyJob blitz.Job[int, blitz.Unit]

func bzEmpty(t *blitz.Task, depth int) blitz.Unit {
	if depth == 0 {
		return blitz.Unit{}
	}
	f := bzEmptyJob.Fork(t, bzEmpty, depth-1)
	bzEmpty(t, depth-1)
	if _, ok := f.Stolen(t); !ok {
		bzEmpty(t, depth-1)
	}
	return blitz.Unit{}
}

//go:noinline
func bzEmptySeq(depth int) {
	if depth == 0 {
		return
	}
	bzEmptySeq(depth - 1)
	bzEmptySeq(depth - 1)
}

// --- harness --------------------------------------------------------------------------

// bzInPool runs the benchmark loop inside one job on a worker of a fresh pool, so
// exactly `workers` goroutines compute and the loop itself allocates nothing.
func bzInPool(b *testing.B, workers int, body func(t *blitz.Task)) {
	p, err := blitz.NewPool(blitz.Config{Workers: workers})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	b.ReportAllocs()
	done := make(chan struct{})
	p.Go(func(t *blitz.Task) {
		defer close(done)
		for b.Loop() {
			body(t)
		}
	})
	<-done
}

func perUnit(b *testing.B, units float64, unit string) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/units, unit)
}

// bzCPU returns the process's user+system CPU time (getrusage).
func bzCPU() time.Duration {
	d, _ := processCPU()
	return d
}

// bzIdleCost measures the CPU the process uses in the second after setup returned, in
// percent of one core.
func bzIdleCost(b *testing.B, setup func() func()) {
	b.ReportAllocs()
	var pct float64
	for b.Loop() {
		teardown := setup()
		c0, t0 := bzCPU(), time.Now()
		time.Sleep(time.Second)
		pct = 100 * float64(bzCPU()-c0) / float64(time.Since(t0))
		teardown()
	}
	b.ReportMetric(pct, "%core")
}

// --- cases ----------------------------------------------------------------------------

func blitzCases(cfg Config) []Case {
	fibN, goFibN, treeBig := 30, 25, 1<<24
	if cfg.Quick {
		fibN, goFibN, treeBig = 25, 20, 1<<20
	}
	fibPool := func(workers int, fib func(*blitz.Task, int) int) func(b *testing.B) {
		return func(b *testing.B) {
			bzInPool(b, workers, func(t *blitz.Task) { fib(t, fibN) })
			perUnit(b, bzFibForks(fibN), "ns/fork")
		}
	}
	fibSeq := func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			runtime.KeepAlive(bzFibSeq(fibN))
		}
		perUnit(b, bzFibForks(fibN), "ns/fork")
	}
	v := 0
	small := bzTree(1023, &v)
	var big *bzNode // built on first use: 2^24 nodes take a while and 800 MB
	var bigOnce sync.Once
	bigTree := func() *bzNode {
		bigOnce.Do(func() { v := 0; big = bzTree(treeBig, &v) })
		return big
	}
	treePool := func(workers int, tree func() *bzNode) func(b *testing.B) {
		return func(b *testing.B) {
			tr := tree()
			bzInPool(b, workers, func(t *blitz.Task) { bzSum(t, tr) })
		}
	}
	treeSeq := func(tree func() *bzNode) func(b *testing.B) {
		return func(b *testing.B) {
			tr := tree()
			b.ReportAllocs()
			for b.Loop() {
				bzSumSeq(tr)
			}
		}
	}
	smallTree := func() *bzNode { return small }
	goWG, goErrgroup := fmt.Sprintf("goroutine+WaitGroup fib(%d)", goFibN), fmt.Sprintf("errgroup fib(%d)", goFibN)
	const bzIdeal = "ideal (2 sequential at once)"

	return []Case{
		{
			Name:   fmt.Sprintf("FibJoin/workers=1 fib(%d)", fibN),
			Metric: "ns/fork",
			// "At most 10 ns/fork above sequential" is a difference, which a Target cannot
			// express: it stays in the note; compare the sequential row by eye.
			Note:    "a fork at every call; target also <= 10 ns/fork above sequential (Rayon: 9.4 ns/fork)",
			Targets: []Target{AllocsAtMost(0), TimesBetter(goWG, 30), TimesBetter(goErrgroup, 30)},
			Roles:   map[string]Role{"blitz Join": RoleVariant},
			Ours:    Impl{"blitz Stolen", fibPool(1, bzFib)},
			Baselines: []Impl{
				{"sequential", fibSeq},
				{"blitz Join", fibPool(1, bzFibJoin)},
				{goWG, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						bzFibGoroutine(goFibN)
					}
					perUnit(b, bzFibForks(goFibN), "ns/fork")
				}},
				{goErrgroup, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						bzFibErrgroup(goFibN)
					}
					perUnit(b, bzFibForks(goFibN), "ns/fork")
				}},
			},
		},
		{
			Name:    fmt.Sprintf("FibJoin/workers=2 fib(%d)", fibN),
			Metric:  "ns/fork",
			Note:    "Rayon: 1.98x faster on 2 workers than on 1",
			Targets: []Target{TimesBetter("blitz 1 worker", 1.8)},
			Roles:   map[string]Role{"blitz 1 worker": RoleVariant, bzIdeal: RoleReference},
			Ours:    Impl{"blitz 2 workers", fibPool(2, bzFib)},
			Baselines: []Impl{{"blitz 1 worker", fibPool(1, bzFib)}, {"sequential", fibSeq},
				// What two cores give right now: two whole sequential fibs at once, time
				// over both. On a shared machine compare the 2-worker figure with this.
				{bzIdeal, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						var wg sync.WaitGroup
						wg.Add(1)
						go func() { defer wg.Done(); runtime.KeepAlive(bzFibSeq(fibN)) }()
						runtime.KeepAlive(bzFibSeq(fibN))
						wg.Wait()
					}
					perUnit(b, 2*bzFibForks(fibN), "ns/fork")
				}}},
		},
		{
			Name:      "TreeSum/nodes=1023",
			Note:      "a join per node; target at most 4x sequential's time (Rayon about 28x, chili about 2x)",
			Targets:   []Target{TimesBetter("sequential", 1.0/4)},
			Roles:     map[string]Role{"blitz 2 workers": RoleVariant},
			Ours:      Impl{"blitz 1 worker", treePool(1, smallTree)},
			Baselines: []Impl{{"sequential", treeSeq(smallTree)}, {"blitz 2 workers", treePool(2, smallTree)}},
		},
		{
			Name:      fmt.Sprintf("TreeSum/nodes=%d", treeBig),
			Note:      "a join per node",
			Targets:   []Target{TimesBetter("sequential", 1.7)},
			Roles:     map[string]Role{"blitz 1 worker": RoleVariant},
			Ours:      Impl{"blitz 2 workers", treePool(2, bigTree)},
			Baselines: []Impl{{"sequential", treeSeq(bigTree)}, {"blitz 1 worker", treePool(1, bigTree)}},
		},
		{
			Name:   "JoinEmptyDepth20",
			Metric: "ns/join",
			Note:   "an empty binary join tree of depth 20 (2^20-1 joins)",
			Roles:  map[string]Role{"blitz 2 workers": RoleVariant},
			Ours: Impl{"blitz 1 worker", func(b *testing.B) {
				bzInPool(b, 1, func(t *blitz.Task) { bzEmpty(t, 20) })
				perUnit(b, 1<<20-1, "ns/join")
			}},
			Baselines: []Impl{
				{"blitz 2 workers", func(b *testing.B) {
					bzInPool(b, 2, func(t *blitz.Task) { bzEmpty(t, 20) })
					perUnit(b, 1<<20-1, "ns/join")
				}},
				{"sequential calls", func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						bzEmptySeq(20)
					}
					perUnit(b, 1<<20-1, "ns/join")
				}},
			},
		},
		{
			Name:  "CallFromOutside/idle",
			Note:  "round trip of Pool.Call from a non-worker goroutine, workers asleep; the caller runs as a guest worker",
			Roles: map[string]Role{"Pool.Go+chan (hand-off)": RoleVariant},
			Ours: Impl{"Pool.Call", func(b *testing.B) {
				p, _ := blitz.NewPool(blitz.Config{Workers: 2})
				defer p.Close()
				time.Sleep(10 * time.Millisecond) // workers fall asleep
				b.ReportAllocs()
				for b.Loop() {
					p.Call(func(*blitz.Task) {})
				}
			}},
			Baselines: []Impl{
				{"Pool.Go+chan (hand-off)", func(b *testing.B) {
					p, _ := blitz.NewPool(blitz.Config{Workers: 2})
					defer p.Close()
					done := make(chan struct{})
					b.ReportAllocs()
					for b.Loop() {
						p.Go(func(*blitz.Task) { done <- struct{}{} })
						<-done
					}
				}},
				{"go+chan", func(b *testing.B) {
					done := make(chan struct{})
					b.ReportAllocs()
					for b.Loop() {
						go func() { done <- struct{}{} }()
						<-done
					}
				}},
			},
		},
		{
			Name: "CallFromOutside/busy",
			Note: "round trip of Pool.Call while every worker computes",
			Ours: Impl{"Pool.Call", func(b *testing.B) {
				p, _ := blitz.NewPool(blitz.Config{Workers: 2})
				defer p.Close()
				stop := bzBusy(p)
				defer stop()
				b.ReportAllocs()
				for b.Loop() {
					p.Call(func(*blitz.Task) {})
				}
			}},
			Baselines: []Impl{
				{"go+chan", func(b *testing.B) {
					p, _ := blitz.NewPool(blitz.Config{Workers: 2})
					defer p.Close()
					stop := bzBusy(p)
					defer stop()
					done := make(chan struct{})
					b.ReportAllocs()
					for b.Loop() {
						go func() { done <- struct{}{} }()
						<-done
					}
				}},
			},
		},
		{
			Name:    "IdleCost",
			Metric:  "%core",
			Note:    "CPU used by an idle pool in the second after a burst of work (getrusage), in percent of one core",
			Targets: []Target{AtMost(2)},
			Roles:   map[string]Role{"no pool": RoleReference},
			Ours: Impl{"blitz pool", func(b *testing.B) {
				bzIdleCost(b, func() func() {
					p, _ := blitz.NewPool(blitz.Config{})
					for range 20 {
						blitz.Call(p, func(t *blitz.Task) int { return bzFib(t, 22) })
					}
					return p.Close
				})
			}},
			Baselines: []Impl{
				{"no pool", func(b *testing.B) {
					bzIdleCost(b, func() func() { return func() {} })
				}},
			},
		},
	}
}

// bzBusy keeps every worker of p computing until the returned stop is called.
func bzBusy(p *blitz.Pool) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for range p.NumWorkers() {
		wg.Add(1)
		p.Go(func(t *blitz.Task) {
			defer wg.Done()
			for {
				select {
				case <-quit:
					return
				default:
					bzFib(t, 15)
				}
			}
		})
	}
	return func() { close(quit); wg.Wait() }
}
