//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// h11GoID is the calling goroutine's id, as runtime.Stack prints it.
func h11GoID() string {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	return strings.Fields(string(b))[1]
}

// h11Alive reports which of ids are goroutines still running.
func h11Alive(ids []string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var alive []string
	for _, id := range ids {
		if strings.Contains(string(buf), "goroutine "+id+" [") {
			alive = append(alive, id)
		}
	}
	return alive
}

// h11Job is a pool job that reports the goroutine running it, then waits for release
// (nil: returns at once).
type h11Job struct {
	ids     chan<- string
	release <-chan struct{}
}

func (j h11Job) serve(*hworker) {
	j.ids <- h11GoID()
	if j.release != nil {
		<-j.release
	}
}

func (p *handlerPool) h11Idle() (n int, sweeping bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle), p.sweeping
}

// TestHostile11PoolSweep: parked goroutines unused for the pool's TTL exit (those over
// maxIdle exit at once); a goroutine busy for many TTLs is not touched, parks again
// when done and is the next one used (LIFO); after closeIdle no goroutine is left.
func TestHostile11PoolSweep(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	p := &handlerPool{maxIdle: 3, ttl: 20 * time.Millisecond}
	ids := make(chan string, 16)
	release := make(chan struct{})
	for range 5 {
		p.get().ch <- h11Job{ids: ids, release: release}
	}
	var first []string
	seen := map[string]bool{}
	for range 5 {
		id := <-ids
		if seen[id] {
			t.Fatalf("two jobs ran at once on goroutine %s", id)
		}
		seen[id] = true
		first = append(first, id)
	}
	close(release)
	waitFor(t, "the parked goroutines to be swept", func() bool {
		n, _ := p.h11Idle()
		return n == 0 && len(h11Alive(first)) == 0
	})
	waitFor(t, "the sweep to stop once nothing is parked", func() bool {
		_, sweeping := p.h11Idle()
		return !sweeping
	})

	// A long job is never swept; a short one beside it is.
	long := make(chan struct{})
	p.get().ch <- h11Job{ids: ids, release: long}
	busy := <-ids
	p.get().ch <- h11Job{ids: ids}
	short := <-ids
	waitFor(t, "the short job's goroutine to be swept", func() bool { return len(h11Alive([]string{short})) == 0 })
	time.Sleep(3 * p.ttl) // more sweeps pass while the long job runs (not a timing assertion)
	if len(h11Alive([]string{busy})) != 1 {
		t.Fatal("the goroutine of a job in progress exited")
	}
	// From here a stall of the test must not let a sweep end the goroutine it checks.
	p.mu.Lock()
	p.ttl = time.Hour
	p.mu.Unlock()
	close(long)
	waitFor(t, "the long job's goroutine to park", func() bool { n, _ := p.h11Idle(); return n == 1 })
	p.get().ch <- h11Job{ids: ids}
	if id := <-ids; id != busy {
		t.Fatalf("the next job ran on goroutine %s, want the parked %s", id, busy)
	}
	waitFor(t, "the goroutine to park again", func() bool { n, _ := p.h11Idle(); return n == 1 })
	p.closeIdle()
	waitFor(t, "no goroutine left after closeIdle", func() bool { return len(h11Alive([]string{busy})) == 0 })
	// A pool closed runs what is handed to it, on a goroutine that then exits.
	p.get().ch <- h11Job{ids: ids}
	last := <-ids
	waitFor(t, "the goroutine of a closed pool to exit", func() bool { return len(h11Alive([]string{last})) == 0 })
}

// TestHostile11PoolSweepHammer: jobs handed to the pool from many goroutines while
// sweeps run all the time (a 1 ms TTL) all run: the sweep never ends a goroutine that
// get has handed out (a send on its closed channel would panic).
func TestHostile11PoolSweepHammer(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	p := &handlerPool{maxIdle: 4, ttl: time.Millisecond}
	defer p.closeIdle()
	var ran atomic.Int64
	var wg sync.WaitGroup
	const g, n = 8, 300
	for i := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make(chan string, 1)
			for k := range n {
				p.get().ch <- h11Job{ids: ids}
				<-ids
				ran.Add(1)
				if (i+k)%50 == 0 {
					time.Sleep(2 * time.Millisecond) // let a sweep end idle goroutines
				}
			}
		}()
	}
	wg.Wait()
	if got := ran.Load(); got != g*n {
		t.Fatalf("%d jobs ran, want %d", got, g*n)
	}
}

// TestHostile11ServerPoolSweep: through the server, handler goroutines idle for the
// pool's TTL exit; a handler running for many TTLs finishes its response; requests
// after the sweep are served; after Close none of the handler goroutines is left.
func TestHostile11ServerPoolSweep(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	const n = 4
	var mu sync.Mutex
	ids := map[string]bool{}
	var entered sync.WaitGroup
	entered.Add(n)
	gate := make(chan struct{})
	srv := &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ids[h11GoID()] = true
		mu.Unlock()
		switch r.URL.Path {
		case "/together":
			entered.Done()
			<-gate
		case "/long":
			time.Sleep(150 * time.Millisecond) // several TTLs
		}
		io.WriteString(w, "done "+r.URL.Path)
	})}
	srv.pool.ttl = 20 * time.Millisecond
	ts := start(t, blitzio.BackendEpoll, srv)
	results := make(chan string, n)
	for range n {
		go func() {
			c, err := net.Dial("tcp", ts.addr)
			if err != nil {
				results <- err.Error()
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, "GET /together HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				results <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			results <- string(b)
		}()
	}
	entered.Wait() // n handlers at once: n goroutines
	close(gate)
	for range n {
		if got := <-results; got != "done /together" {
			t.Fatalf("response %q", got)
		}
	}
	mu.Lock()
	if len(ids) != n {
		t.Fatalf("%d handler goroutines for %d concurrent handlers", len(ids), n)
	}
	mu.Unlock()
	waitFor(t, "the idle handler goroutines to be swept", func() bool { k, _ := srv.pool.h11Idle(); return k == 0 })
	// Served after the sweep, and a long handler with a short one beside it.
	longDone := make(chan string, 1)
	go func() {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			longDone <- err.Error()
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET /long HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			longDone <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		longDone <- string(b)
	}()
	for range 3 {
		if code, body := h11Get(t, ts.addr, "/short"); code != 200 || body != "done /short" {
			t.Fatalf("after the sweep: %d %q", code, body)
		}
		time.Sleep(30 * time.Millisecond)
	}
	if got := <-longDone; got != "done /long" {
		t.Fatalf("long handler: %q", got)
	}
	srv.Close()
	mu.Lock()
	all := make([]string, 0, len(ids))
	for id := range ids {
		all = append(all, id)
	}
	mu.Unlock()
	waitFor(t, "no handler goroutine left after Close", func() bool { return len(h11Alive(all)) == 0 })
}
