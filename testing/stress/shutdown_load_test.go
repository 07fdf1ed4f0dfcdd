package stress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitz"
	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/stream"
)

// Randomised shutdown under load: a runtime and a pool carry a mix of in-flight work
// (CPU work handed to the pool, blocking jobs, timers, child processes, files, request/
// response over in-memory stream pairs) when the runtime's Close or Shutdown(ctx) and
// the pool's Close strike at random moments, in a random order. Afterwards every
// JoinHandle must have resolved, every unit must have answered exactly once if its
// handle reports success and never if it reports cancellation, no child process may be
// left (running or unreaped), and no goroutine or file descriptor.

// unitResult is what a unit of load returns: its id, and a note that is "" when it did
// its work and checked the result, "refused" when the pool refused it (closed), or a
// description of what went wrong.
type unitResult struct {
	id   int
	note string
}

const refused = "refused"

// loadEnv is what the units of one round share.
type loadEnv struct {
	rt   *blitzio.Runtime
	pool *blitz.Pool
	dir  string
	data []int64
	sum  int64
	led  *ledger
}

// loadKind is one kind of in-flight work: start begins unit id on e.rt and returns its
// handle; the unit must call e.led.answer(id) exactly once, in the poll that finishes
// it, when (and only when) it completes.
type loadKind struct {
	name  string
	start func(e *loadEnv, id int, r *rand.Rand) blitzio.JoinHandle[unitResult]
}

// loadKinds is the table of in-flight work the shutdown and soak tests mix.
//
// Extension point: TCP connections, HTTP requests and channel traffic join this table
// when those modules land (a unit per connection or request, answered once; the
// shutdown checks then also cover sockets through the fd check).
var loadKinds = []loadKind{
	{"cpu-completion", startCPUCompletion},
	{"cpu-blocking", startCPUBlocking},
	{"timer", startTimer},
	{"process", startProcess},
	{"file", startFile},
	{"duplex", startDuplex},
}

// finish records unit id's answer and returns its result.
func (e *loadEnv) finish(id int, note string) unitResult {
	e.led.answer(id)
	return unitResult{id, note}
}

// cpuNote checks the outcome of CPU work: "" for the right sum, refused for a pool that
// was closed, a description otherwise.
func (e *loadEnv) cpuNote(o outcome[int64]) string {
	switch {
	case errors.Is(o.err, blitz.ErrClosed):
		return refused
	case o.err != nil:
		return "pool: " + o.err.Error()
	case o.v != e.sum:
		return fmt.Sprintf("sum %d, want %d", o.v, e.sum)
	}
	return ""
}

func startCPUCompletion(e *loadEnv, id int, _ *rand.Rand) blitzio.JoinHandle[unitResult] {
	return blitzio.Spawn(e.rt, blitzio.Map(offload(e.pool, sumWork(e.pool, e.data, -1, id)),
		func(o outcome[int64]) unitResult { return e.finish(id, e.cpuNote(o)) }))
}

func startCPUBlocking(e *loadEnv, id int, _ *rand.Rand) blitzio.JoinHandle[unitResult] {
	return blitzio.SpawnBlocking(e.rt, func() unitResult {
		v, err := callPool(e.pool, sumWork(e.pool, e.data, -1, id))
		return e.finish(id, e.cpuNote(outcome[int64]{v, err}))
	})
}

func startTimer(e *loadEnv, id int, r *rand.Rand) blitzio.JoinHandle[unitResult] {
	d := time.Duration(r.IntN(20_000)) * time.Microsecond
	return blitzio.Spawn(e.rt, blitzio.Map(blitzio.Sleep(d), func(struct{}) unitResult { return e.finish(id, "") }))
}

// startProcess runs a child: true (its status checked), echo through a pipe (its output
// checked) or a sleep long enough that a shutdown often kills it.
func startProcess(e *loadEnv, id int, r *rand.Rand) blitzio.JoinHandle[unitResult] {
	kind := r.IntN(3)
	d := strconv.FormatFloat(float64(r.IntN(100))/1000, 'f', 3, 64)
	return blitzio.Spawn(e.rt, blitzio.Async(func(co *blitzio.Co) unitResult {
		switch kind {
		case 0, 1:
			name, args := "true", []string{}
			if kind == 1 {
				name, args = "sleep", []string{d}
			}
			st := blitzio.Await(co, blitzio.Command(name, args...).Status())
			if st.Err != nil || !st.Value.Success() {
				return e.finish(id, fmt.Sprintf("%s %v: %v %v", name, args, st.Value, st.Err))
			}
			return e.finish(id, "")
		}
		out := blitzio.Await(co, blitzio.Command("echo", strconv.Itoa(id)).Output())
		if out.Err != nil || string(out.Value.Stdout) != strconv.Itoa(id)+"\n" {
			return e.finish(id, fmt.Sprintf("echo %d: %q %v", id, out.Value.Stdout, out.Err))
		}
		return e.finish(id, "")
	}))
}

// startFile writes a file on the blocking pool, reads it back and removes it.
func startFile(e *loadEnv, id int, r *rand.Rand) blitzio.JoinHandle[unitResult] {
	name := filepath.Join(e.dir, "unit"+strconv.Itoa(id))
	content := bytes.Repeat([]byte(strconv.Itoa(id)+","), 1+r.IntN(2000))
	return blitzio.Spawn(e.rt, blitzio.Async(func(co *blitzio.Co) unitResult {
		if w := blitzio.Await(co, blitzio.WriteFile(name, content, 0o600)); w.Err != nil {
			return e.finish(id, "write: "+w.Err.Error())
		}
		got := blitzio.Await(co, blitzio.ReadFile(name))
		blitzio.Await(co, blitzio.Remove(name))
		if got.Err != nil || !bytes.Equal(got.Value, content) {
			return e.finish(id, fmt.Sprintf("read back %d bytes of %d: %v", len(got.Value), len(content), got.Err))
		}
		return e.finish(id, "")
	}))
}

// startDuplex is a request/response exchange over an in-memory stream pair: the client
// sends its id framed, a server task answers with the id and a sum computed on the pool.
func startDuplex(e *loadEnv, id int, r *rand.Rand) blitzio.JoinHandle[unitResult] {
	size := 8 + r.IntN(64) // small buffers: frames cross in several reads and writes
	return blitzio.Spawn(e.rt, blitzio.Async(func(co *blitzio.Co) unitResult {
		client, server := stream.Duplex(size)
		defer client.Close()
		defer server.Close()
		srv := blitzio.Spawn(co, serveDuplex(server, e.pool, e.data))
		note, _ := requestOnce(co, client, id, e.sum)
		client.Close() // the server sees EOF and returns
		if res := blitzio.Await(co, srv); res.Err != nil || (res.Value.Value != "" && note == "") {
			note = fmt.Sprintf("server: %q %v", res.Value.Value, res.Err)
		}
		return e.finish(id, note)
	}))
}

// requestOnce sends one request on conn and checks the response; it returns a note
// ("" when right) and the response's latency.
func requestOnce(co *blitzio.Co, conn *stream.DuplexStream, id int, sum int64) (string, time.Duration) {
	codec := stream.LengthDelimitedCodec{}
	w := stream.NewFrameWriter[[]byte](conn, codec)
	rd := stream.NewFrameReader[[]byte](conn, codec)
	start := time.Now()
	if res := blitzio.Await(co, w.Send([]byte(strconv.Itoa(id)))); res.Err != nil {
		return "send: " + res.Err.Error(), 0
	}
	resp := blitzio.Await(co, rd.Next())
	lat := time.Since(start)
	if resp.Err != nil {
		return "receive: " + resp.Err.Error(), lat
	}
	if want := fmt.Sprintf("%d:%d", id, sum); string(resp.Value) != want {
		return fmt.Sprintf("response %q, want %q", resp.Value, want), lat
	}
	return "", lat
}

// serveDuplex answers framed requests on conn until EOF: each request's text back, with
// the sum of data computed on pool. It returns "" at a clean EOF, or what went wrong.
func serveDuplex(conn *stream.DuplexStream, pool *blitz.Pool, data []int64) blitzio.Future[blitzio.Result[string]] {
	return blitzio.Async(func(co *blitzio.Co) blitzio.Result[string] {
		codec := stream.LengthDelimitedCodec{}
		rd := stream.NewFrameReader[[]byte](conn, codec)
		w := stream.NewFrameWriter[[]byte](conn, codec)
		for {
			req := blitzio.Await(co, rd.Next())
			if req.Err != nil {
				if isEOF(req.Err) {
					return blitzio.Result[string]{}
				}
				return blitzio.Result[string]{Value: "read: " + req.Err.Error()}
			}
			o := blitzio.Await(co, offload(pool, sumWork(pool, data, -1, 0)))
			if o.err != nil {
				return blitzio.Result[string]{Value: "pool: " + o.err.Error()}
			}
			if res := blitzio.Await(co, w.Send(fmt.Appendf(nil, "%s:%d", req.Value, o.v))); res.Err != nil {
				return blitzio.Result[string]{Value: "write: " + res.Err.Error()}
			}
		}
	})
}

func isEOF(err error) bool { return err != nil && strings.Contains(err.Error(), "EOF") }

// childPIDs returns the pids of this process's children (running or not yet reaped), or
// nil where the kernel does not list them.
func childPIDs() []string {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var pids []string
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "children"))
		if err != nil {
			continue
		}
		pids = append(pids, strings.Fields(string(b))...)
	}
	return pids
}

// shutdownPlans are the ways a round ends: each closes the runtime and the pool, at
// moments and in an order of its choosing, while the load goes on.
var shutdownPlans = []struct {
	name string
	run  func(rt *blitzio.Runtime, pool *blitz.Pool, r *rand.Rand) error
}{
	{"Close,PoolClose", func(rt *blitzio.Runtime, pool *blitz.Pool, r *rand.Rand) error {
		err := rt.Close()
		jitter(r)
		pool.Close()
		return err
	}},
	{"PoolClose,Close", func(rt *blitzio.Runtime, pool *blitz.Pool, r *rand.Rand) error {
		pool.Close()
		jitter(r)
		return rt.Close()
	}},
	{"ConcurrentCloses", func(rt *blitzio.Runtime, pool *blitz.Pool, r *rand.Rand) error {
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); pool.Close() }()
		var err error
		go func() { defer wg.Done(); err = rt.Close() }()
		wg.Wait()
		return err
	}},
	{"ShutdownDeadline", func(rt *blitzio.Runtime, pool *blitz.Pool, r *rand.Rand) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(2000))*time.Microsecond)
		defer cancel()
		// Either it finishes in time or it reports the deadline, and the shutdown goes
		// on in the background: Close waits for the rest.
		if err := rt.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("Shutdown: %w", err)
		}
		pool.Close()
		return rt.Close()
	}},
	{"ShutdownFromTask", func(rt *blitzio.Runtime, pool *blitz.Pool, r *rand.Rand) error {
		// A task starts the shutdown of its own runtime with a cancelled context.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		blitzio.Spawn(rt, blitzio.Lazy(func() error { return rt.Shutdown(ctx) })).Detach()
		jitter(r)
		pool.Close()
		return rt.Close()
	}},
}

func jitter(r *rand.Rand) { time.Sleep(time.Duration(r.IntN(3000)) * time.Microsecond) }

// TestShutdownUnderLoad runs rounds of random load, each ended by a random shutdown plan
// at a random moment.
func TestShutdownUnderLoad(t *testing.T) {
	rounds := scaled(20, 4)
	r := seeded(t)
	for round := range rounds {
		plan := shutdownPlans[r.IntN(len(shutdownPlans))]
		sub := r.Uint64()
		t.Run(fmt.Sprintf("%d-%s", round, plan.name), func(t *testing.T) {
			leakCheck(t)
			r := rand.New(rand.NewPCG(sub, uint64(round)))
			watchdog(t, "shutdown round", 60*time.Second, func() {
				shutdownRound(t, r, plan.run)
			})
		})
	}
}

func shutdownRound(t *testing.T, r *rand.Rand, plan func(*blitzio.Runtime, *blitz.Pool, *rand.Rand) error) {
	maxUnits := scaled(600, 4)
	pool, err := blitz.NewPool(blitz.Config{Workers: 1 + r.IntN(3)})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := blitzio.New(blitzio.Config{Workers: 1 + r.IntN(2), MaxBlockingThreads: 2 + r.IntN(6)})
	if err != nil {
		t.Fatal(err)
	}
	data, sum := testData(2_000 + r.IntN(8_000))
	e := &loadEnv{rt: rt, pool: pool, dir: t.TempDir(), data: data, sum: sum, led: newLedger(maxUnits)}

	// Two spawners start units until the ledger is full or the shutdown is over; each
	// has its own random source (a rand.Rand is not safe for concurrent use).
	type started struct {
		id   int
		kind string
		h    blitzio.JoinHandle[unitResult]
	}
	var (
		mu       sync.Mutex
		units    []started
		next     atomic.Int64
		stop     = make(chan struct{})
		spawners sync.WaitGroup
	)
	for s := range 2 {
		sr := rand.New(rand.NewPCG(r.Uint64(), uint64(s)))
		spawners.Add(1)
		go func() {
			defer spawners.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := int(next.Add(1) - 1)
				if id >= maxUnits {
					return
				}
				k := loadKinds[sr.IntN(len(loadKinds))]
				h := k.start(e, id, sr)
				mu.Lock()
				units = append(units, started{id, k.name, h})
				mu.Unlock()
				if sr.IntN(4) == 0 {
					time.Sleep(time.Duration(sr.IntN(200)) * time.Microsecond)
				}
			}
		}()
	}
	// Plain goroutines hammer the pool too; after its Close they must see ErrClosed.
	var callers sync.WaitGroup
	var callerErr firstErr
	for g := range 2 {
		callers.Add(1)
		go func() {
			defer callers.Done()
			for {
				v, err := callPool(pool, sumWork(pool, data, -1, g))
				if errors.Is(err, blitz.ErrClosed) {
					return
				}
				if err != nil || v != sum {
					callerErr.add(fmt.Errorf("goroutine caller: sum %d, err %v", v, err))
					return
				}
			}
		}()
	}

	time.Sleep(time.Duration(r.IntN(60_000)) * time.Microsecond)
	if err := plan(rt, pool, r); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	close(stop)
	spawners.Wait()
	callers.Wait()
	if err := callerErr.get(); err != nil {
		t.Error(err)
	}

	var done, cancelled, refusedN int
	seen := make(map[int]bool, len(units))
	for _, u := range units {
		seen[u.id] = true
		res, err, ok := waitHandle(u.h, 20*time.Second)
		n := e.led.count(u.id)
		switch {
		case !ok:
			t.Errorf("unit %d (%s): handle not resolved 20s after the shutdown: lost", u.id, u.kind)
		case errors.Is(err, blitzio.ErrCancelled):
			cancelled++
			if n != 0 {
				t.Errorf("unit %d (%s): cancelled but answered %d times", u.id, u.kind, n)
			}
		case err != nil:
			t.Errorf("unit %d (%s): %v", u.id, u.kind, err)
		case n != 1:
			t.Errorf("unit %d (%s): completed but answered %d times, want once", u.id, u.kind, n)
		case res.id != u.id:
			t.Errorf("unit %d (%s): answered as unit %d", u.id, u.kind, res.id)
		case res.note == refused:
			refusedN++
		case res.note != "":
			t.Errorf("unit %d (%s): %s", u.id, u.kind, res.note)
		default:
			done++
		}
	}
	for id := range min(int(next.Load()), maxUnits) {
		if !seen[id] {
			t.Errorf("unit %d was started but has no handle", id)
		}
		if n := e.led.count(id); n > 1 {
			t.Errorf("unit %d answered %d times", id, n)
		}
	}
	if done+cancelled+refusedN != len(units) && !t.Failed() {
		t.Errorf("%d units, %d done + %d cancelled + %d refused", len(units), done, cancelled, refusedN)
	}
	// Every child process is reaped, including those of dropped futures.
	deadline := time.Now().Add(10 * time.Second)
	for len(childPIDs()) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if pids := childPIDs(); len(pids) > 0 {
		t.Errorf("child processes left after the shutdown (running or unreaped): %v", pids)
	}
	t.Logf("%d units: %d done, %d cancelled, %d refused by the closed pool", len(units), done, cancelled, refusedN)
}
