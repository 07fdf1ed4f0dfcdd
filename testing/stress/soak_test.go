package stress

import (
	"encoding/csv"
	"encoding/xml"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitz"
	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/stream"
)

// The soak test: mixed load for a given time (go test -run Soak -soak 30m; a few
// seconds by default), sampled at a steady interval. It fails if a request is lost or
// answered wrongly, or if heap in use or the goroutine count keeps growing over the
// second half of the run (a least-squares slope, projected over that half, above a
// tolerance), and writes the series as CSV and as an SVG chart.
//
// The request-like operation is a framed request/response over an in-memory stream
// pair between two blitzio tasks, the server computing each answer with blitz; around
// it run timers, blocking-pool jobs, child processes, files and plain goroutines
// calling the pool. When the networking modules land, loopback TCP and HTTP
// connections join the connection mix (see loadKinds and crossScenarios).

// soakSample is one row of the soak's series.
type soakSample struct {
	At         time.Duration // since the load started
	HeapInuse  uint64        // bytes (runtime.MemStats.HeapInuse)
	Goroutines int
	FDs        int
	Requests   int64         // answered in this interval
	P50, P99   time.Duration // latency of the requests answered in this interval
	Throughput float64       // requests per second in this interval
}

// latencies collects the latencies of one interval.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// take returns the interval's latencies, sorted, and starts a new interval.
func (l *latencies) take() []time.Duration {
	l.mu.Lock()
	d := l.d
	l.d = make([]time.Duration, 0, len(d))
	l.mu.Unlock()
	slices.Sort(d)
	return d
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// slope is the least-squares slope of ys over xs.
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

// growth fits a line to the second half of the series and returns how much it rises
// over that half (slope times the half's duration), and the half's mean.
func growth(samples []soakSample, value func(soakSample) float64) (rise, mean float64) {
	half := samples[len(samples)/2:]
	xs := make([]float64, len(half))
	ys := make([]float64, len(half))
	for i, s := range half {
		xs[i] = s.At.Seconds()
		ys[i] = value(s)
		mean += ys[i]
	}
	mean /= float64(len(half))
	return slope(xs, ys) * (xs[len(xs)-1] - xs[0]), mean
}

func TestSoak(t *testing.T) {
	duration := *soakFlag
	if duration == 0 {
		duration = 3 * time.Second
		if raceEnabled {
			duration = 2 * time.Second
		}
	}
	interval := time.Second
	if duration < time.Minute {
		interval = max(100*time.Millisecond, duration/20)
	}
	// go test's -timeout (10 minutes unless given) would kill a long soak midway, with
	// a panic that names no cause; say what to do instead.
	if deadline, ok := t.Deadline(); ok && time.Until(deadline) < duration+2*time.Minute {
		t.Fatalf("-soak %v does not fit in go test's -timeout (%v left): add -timeout %v",
			duration, time.Until(deadline).Round(time.Second), (duration + 5*time.Minute).Round(time.Minute))
	}
	dir := *soakDir
	if dir == "" {
		dir = t.TempDir()
	}
	leakCheck(t)
	r := seeded(t)

	pool, err := blitz.NewPool(blitz.Config{Workers: runtime.GOMAXPROCS(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	rt, err := blitzio.New(blitzio.Config{Workers: 2, MaxBlockingThreads: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	data, sum := testData(4_000)

	var (
		sent, answered atomic.Int64
		lat            latencies
		errs           firstErr
		stop           = make(chan struct{})
		stopping       atomic.Bool
	)
	// Connections: more than cores, each a client task sending requests one after the
	// other to its own server task.
	conns := 4 * runtime.GOMAXPROCS(0)
	if raceEnabled {
		conns = 2 * runtime.GOMAXPROCS(0)
	}
	clients := make([]blitzio.JoinHandle[struct{}], conns)
	for c := range clients {
		size := 16 + r.IntN(256)
		clients[c] = blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) struct{} {
			client, server := stream.Duplex(size)
			defer client.Close()
			defer server.Close()
			srv := blitzio.Spawn(co, serveDuplex(server, pool, data))
			for id := c; !stopping.Load(); id += conns {
				sent.Add(1)
				note, d := requestOnce(co, client, id, sum)
				if note != "" {
					errs.add(fmt.Errorf("connection %d request %d: %s", c, id, note))
					break
				}
				answered.Add(1)
				lat.add(d)
			}
			client.Close()
			if res := blitzio.Await(co, srv); res.Err != nil || res.Value.Value != "" {
				errs.add(fmt.Errorf("connection %d server: %q %v", c, res.Value.Value, res.Err))
			}
			return struct{}{}
		}))
	}
	// Background load: a unit of a random kind now and then (timers, blocking CPU work,
	// processes, files), and goroutines calling the pool.
	var bg sync.WaitGroup
	var bgUnits atomic.Int64
	bgSeed := r.Uint64()
	bg.Add(1)
	go func() {
		defer bg.Done()
		br := rand.New(rand.NewPCG(bgSeed, 1))
		e := &loadEnv{rt: rt, pool: pool, dir: t.TempDir(), data: data, sum: sum, led: newLedger(1)}
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(2+br.IntN(10)) * time.Millisecond):
			}
			e.led = newLedger(1) // each unit answers its own one-slot ledger
			k := loadKinds[br.IntN(len(loadKinds))]
			res, err, ok := waitHandle(k.start(e, 0, br), 30*time.Second)
			switch {
			case !ok:
				errs.add(fmt.Errorf("background %s unit not answered within 30s", k.name))
				return
			case err != nil || res.note != "":
				errs.add(fmt.Errorf("background %s unit: %v %s", k.name, err, res.note))
				return
			}
			bgUnits.Add(1)
		}
	}()
	for g := range 2 {
		bg.Add(1)
		go func() {
			defer bg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
				if v, err := callPool(pool, sumWork(pool, data, -1, g)); err != nil || v != sum {
					errs.add(fmt.Errorf("goroutine caller: sum %d, err %v", v, err))
					return
				}
			}
		}()
	}

	// Sampling.
	var samples []soakSample
	start := time.Now()
	last, lastAnswered := start, int64(0)
	ticker := time.NewTicker(interval)
	for now := range ticker.C {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		d := lat.take()
		n := answered.Load()
		s := soakSample{
			At:         now.Sub(start),
			HeapInuse:  ms.HeapInuse,
			Goroutines: runtime.NumGoroutine(),
			FDs:        len(openFDs()),
			Requests:   n - lastAnswered,
			P50:        percentile(d, 0.50),
			P99:        percentile(d, 0.99),
			Throughput: float64(n-lastAnswered) / now.Sub(last).Seconds(),
		}
		samples = append(samples, s)
		last, lastAnswered = now, n
		if now.Sub(start) >= duration || errs.get() != nil {
			break
		}
	}
	ticker.Stop()
	stopping.Store(true)
	close(stop)

	watchdog(t, "soak wind-down", 60*time.Second, func() {
		for c, h := range clients {
			if _, err := h.Wait(); err != nil {
				errs.add(fmt.Errorf("connection %d: %w", c, err))
			}
		}
		bg.Wait()
	})
	if err := rt.Close(); err != nil {
		t.Error(err)
	}
	pool.Close()

	csvPath, svgPath := filepath.Join(dir, "soak.csv"), filepath.Join(dir, "soak.svg")
	if err := writeSoakCSV(csvPath, samples); err != nil {
		t.Error(err)
	}
	if err := writeSoakSVG(svgPath, samples, duration); err != nil {
		t.Error(err)
	}

	if err := errs.get(); err != nil {
		t.Error(err)
	}
	if lost := sent.Load() - answered.Load(); lost != 0 && errs.get() == nil {
		t.Errorf("%d requests sent, %d answered: %d lost", sent.Load(), answered.Load(), lost)
	}
	if answered.Load() == 0 || bgUnits.Load() == 0 {
		t.Errorf("no load ran: %d requests answered, %d background units", answered.Load(), bgUnits.Load())
	}
	if len(samples) < 4 {
		t.Fatalf("only %d samples", len(samples))
	}
	// Growth over the second half, with tolerances for a noisy shared machine: heap may
	// rise by 16 MiB or half its mean (GC pacing alone moves it by megabytes); the
	// goroutine count by 32 or a quarter of its mean.
	heapRise, heapMean := growth(samples, func(s soakSample) float64 { return float64(s.HeapInuse) })
	if limit := max(16<<20, heapMean/2); heapRise > limit {
		t.Errorf("heap in use grows without bound: +%.1f MiB over the second half (mean %.1f MiB, limit %.1f MiB)",
			heapRise/(1<<20), heapMean/(1<<20), limit/(1<<20))
	}
	gRise, gMean := growth(samples, func(s soakSample) float64 { return float64(s.Goroutines) })
	if limit := max(32, gMean/4); gRise > limit {
		t.Errorf("goroutines grow without bound: +%.0f over the second half (mean %.0f, limit %.0f)", gRise, gMean, limit)
	}

	var peak uint64
	var all []time.Duration
	for _, s := range samples {
		peak = max(peak, s.HeapInuse)
		all = append(all, s.P99)
	}
	slices.Sort(all)
	final := samples[len(samples)-1]
	t.Logf("soak %v: %d requests over %d connections (%.0f/s), %d background units; peak heap in use %.1f MiB; "+
		"last sample: %d goroutines, %d fds, p50 %v, p99 %v; worst interval p99 %v; series in %s and %s",
		time.Since(start).Round(time.Millisecond), answered.Load(), conns, float64(answered.Load())/time.Since(start).Seconds(),
		bgUnits.Load(), float64(peak)/(1<<20), final.Goroutines, final.FDs, final.P50, final.P99, all[len(all)-1], csvPath, svgPath)
}

func writeSoakCSV(path string, samples []soakSample) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"seconds", "heap_inuse_bytes", "goroutines", "fds", "requests", "p50_us", "p99_us", "throughput_per_s"})
	for _, s := range samples {
		w.Write([]string{
			strconv.FormatFloat(s.At.Seconds(), 'f', 3, 64),
			strconv.FormatUint(s.HeapInuse, 10),
			strconv.Itoa(s.Goroutines),
			strconv.Itoa(s.FDs),
			strconv.FormatInt(s.Requests, 10),
			strconv.FormatInt(s.P50.Microseconds(), 10),
			strconv.FormatInt(s.P99.Microseconds(), 10),
			strconv.FormatFloat(s.Throughput, 'f', 1, 64),
		})
	}
	w.Flush()
	return errors.Join(w.Error(), f.Close())
}

func writeSoakSVG(path string, samples []soakSample, duration time.Duration) error {
	svg := soakChart(samples, duration)
	// The chart must be well-formed XML: a broken chart is a failure, not an artefact.
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		return fmt.Errorf("soak chart is not well-formed: %w", err)
	}
	return os.WriteFile(path, []byte(svg), 0o644)
}
