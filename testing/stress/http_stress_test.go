//go:build linux

package stress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/httpserve"
	"github.com/blitzgo/blitz/blitzio/stream"
)

// HTTP under load: net/http's server over blitzio's net.Listener and net.Conn adapters
// (stream.NewTCPListener), on both backends, driven by Go's HTTP client with keep-alive
// connections, one connection per request, requests cancelled mid-flight, raw
// connections reset in the middle of a request body, and slow readers of large
// responses. Every response is checked byte for byte, and the handler's ledger proves
// each completed request reached the handler exactly once.

// startHTTP starts an HTTP server for h on rt, listening on the loopback, and returns
// the address to dial and a stop function that shuts the server down gracefully (it
// fails t, from the test goroutine, if that does not complete within netStopLimit).
type startHTTP func(t *testing.T, rt *blitzio.Runtime, h http.Handler) (addr string, stop func())

// httpServers are the HTTP servers the HTTP scenarios run, each on every backend.
//
// Entries: net/http over blitzio's net.Listener adapter, and blitzio's own serving
// (package httpserve), each stopped by its graceful shutdown. Every entry runs TestHTTPLoad and TestFaultSilentClients/http, which
// requires the server to close a connection that sends nothing (a header timeout, as
// http.Server.ReadHeaderTimeout) well within clientDeadline.
var httpServers = []struct {
	name  string
	start startHTTP
}{
	{"net-http-over-stream-listener", startNetHTTP},
	{"httpserve", startHTTPServe},
}

// httpHeaderTimeout is the servers' limit on reading a request's header: a client that
// connects and sends nothing is closed after it. It is far above any request's time
// under load, on purpose: on a loaded 2-core machine under -race, the whole process
// was seen stalled for 1.5 s (Go's own timers late by as much), and a header timeout
// of 1 s then closed well-behaved connections before their request was read.
const httpHeaderTimeout = 3 * time.Second

// startHTTPServe serves h with blitzio's own HTTP/1.1 serving (httpserve.Server) on
// rt: one task per connection, handlers on pooled goroutines.
func startHTTPServe(t *testing.T, rt *blitzio.Runtime, h http.Handler) (string, func()) {
	t.Helper()
	l := listenLoopback(t)
	addr := l.Addr().String()
	logs := &lockedBuffer{}
	srv := &httpserve.Server{Handler: h, ReadHeaderTimeout: httpHeaderTimeout, ErrorLog: log.New(logs, "", 0)}
	return addr, serveUntilStopped(t, "httpserve.Server", func() error { return srv.Serve(rt, l) },
		srv.Shutdown, srv.Close, logs)
}

// startNetHTTP serves h with an http.Server whose listener is stream.NewTCPListener
// over a blitzio.TCPListener on rt: every connection is a stream.Conn served by rt's
// I/O driver.
func startNetHTTP(t *testing.T, rt *blitzio.Runtime, h http.Handler) (string, func()) {
	t.Helper()
	ln := stream.NewTCPListener(rt, listenLoopback(t))
	logs := &lockedBuffer{}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: httpHeaderTimeout, ErrorLog: log.New(logs, "", 0)}
	return ln.Addr().String(), serveUntilStopped(t, "http.Server", func() error { return srv.Serve(ln) },
		srv.Shutdown, srv.Close, logs)
}

func listenLoopback(t *testing.T) *blitzio.TCPListener {
	t.Helper()
	l, err := blitzio.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatalf("ListenTCP: %v", err)
	}
	return l
}

// serveUntilStopped runs serve on a goroutine and returns the stop function of a
// startHTTP: a graceful shutdown bounded by netStopLimit (Close after it fails), then
// serve must return http.ErrServerClosed. The server's error log is kept; a line that
// reports an accept error or a panic in a handler fails t. A test that fails part way
// still stops the server (t.Cleanup).
func serveUntilStopped(t *testing.T, name string, serve func() error, shutdown func(context.Context) error,
	closeNow func() error, logs *lockedBuffer) func() {
	served := make(chan error, 1)
	go func() { served <- serve() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), netStopLimit)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			t.Errorf("%s.Shutdown: %v; goroutines:\n%s", name, err, stacks())
			closeNow()
		}
		select {
		case err := <-served:
			if !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("%s.Serve returned %v, want http.ErrServerClosed", name, err)
			}
		case <-time.After(netStopLimit):
			t.Errorf("%s.Serve did not return %v after Shutdown; goroutines:\n%s", name, netStopLimit, stacks())
		}
		if s := logs.String(); strings.Contains(s, "Accept error") || strings.Contains(s, "panic") {
			t.Errorf("server log:\n%s", s)
		} else if s != "" {
			t.Logf("server log (expected entries for the clients that misbehave):\n%s", firstLines(s, 10))
		}
	}
	t.Cleanup(stop)
	return stop
}

// lockedBuffer is a bytes.Buffer for concurrent writers (a server's error log).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// firstLines returns the first n lines of s, and how many were left out.
func firstLines(s string, n int) string {
	lines := strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("\n... %d more lines", len(lines)-n)
}

// httpLedger is the handler's record: how many times each request id reached it, and
// how the last of them ended.
type httpLedger struct {
	mu   sync.Mutex
	seen map[uint64]int
	errs map[uint64]error
}

func newHTTPLedger() *httpLedger {
	return &httpLedger{seen: map[uint64]int{}, errs: map[uint64]error{}}
}

func (l *httpLedger) record(id uint64, err error) {
	l.mu.Lock()
	l.seen[id]++
	l.errs[id] = err
	l.mu.Unlock()
}

func (l *httpLedger) get(id uint64) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[id], l.errs[id]
}

// loadHandler serves the HTTP load:
//
//   - POST /echo?id=N with header X-Sum (FNV-1a of the body, hex): the body back, with
//     X-Sum of what the server read; 400 if the body read does not match X-Sum;
//   - GET /gen?id=N&n=BYTES&chunk=K&len=0|1: the first BYTES of session N's byte stream,
//     written K bytes at a time and flushed after each write (chunked transfer
//     encoding) unless len=1 announces a Content-Length.
//
// Each request reaching it is recorded in led with the error that ended it.
func loadHandler(led *httpLedger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.ParseUint(r.URL.Query().Get("id"), 10, 64)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			led.record(id, fmt.Errorf("reading the body after %d bytes: %w", len(body), err))
			return
		}
		sum := fmt.Sprintf("%016x", fnv64(body))
		if sum != r.Header.Get("X-Sum") {
			led.record(id, fmt.Errorf("%w: body of %d bytes has sum %s, header %s", errCorrupt, len(body), sum, r.Header.Get("X-Sum")))
			http.Error(w, "checksum mismatch", http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Sum", sum)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, err = w.Write(body)
		led.record(id, err)
	})
	mux.HandleFunc("GET /gen", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		id, _ := strconv.ParseUint(q.Get("id"), 10, 64)
		n, _ := strconv.Atoi(q.Get("n"))
		chunk, _ := strconv.Atoi(q.Get("chunk"))
		chunk = max(chunk, 1)
		withLen := q.Get("len") == "1"
		if withLen {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		src := byteStream(id)
		buf := make([]byte, chunk)
		var err error
		for sent := 0; sent < n && err == nil; {
			k := min(chunk, n-sent)
			src.Read(buf[:k])
			_, err = w.Write(buf[:k])
			sent += k
			if !withLen {
				err = errors.Join(err, http.NewResponseController(w).Flush())
			}
		}
		led.record(id, err)
	})
	return mux
}

// httpReq is one planned request.
type httpReq struct {
	id     uint64
	gen    bool // GET /gen, else POST /echo
	size   int  // body or response size
	chunk  int
	len    bool
	slow   bool          // read the response a little at a time
	cancel time.Duration // > 0: cancel the request this long after it starts
	pause  time.Duration
}

// httpClientKind is a kind of client of the HTTP load.
type httpClientKind int

const (
	keepAlive httpClientKind = iota // one shared keep-alive Transport
	oneShot                         // a connection per request
	canceller                       // keep-alive, requests cancelled at random moments
	rawReset                        // raw connections reset in the middle of a body
)

func (k httpClientKind) String() string {
	return [...]string{"keep-alive", "one-shot", "canceller", "raw-reset"}[k]
}

// planHTTPReq draws a request.
func planHTTPReq(r *rand.Rand, id uint64, kind httpClientKind) httpReq {
	q := httpReq{id: id, gen: r.IntN(2) == 0, size: msgSize(r, 256<<10) - 1, chunk: 1 + r.IntN(32<<10), len: r.IntN(2) == 0}
	if q.gen && r.IntN(40) == 0 {
		q.slow, q.size = true, 512<<10+r.IntN(512<<10)
	}
	if kind == canceller {
		q.cancel = time.Duration(1+r.IntN(30000)) * time.Microsecond
	}
	if r.IntN(5) == 0 {
		q.pause = time.Duration(r.IntN(2000)) * time.Microsecond
	}
	return q
}

// httpOutcome is what a client saw of one request: done when it completed (and its
// response was checked), else the error the client expected.
type httpOutcome struct {
	done bool
	err  error // unexpected: fails the test
}

// doHTTP runs request q with client c against base and checks the response.
func doHTTP(c *http.Client, base string, q httpReq) httpOutcome {
	ctx := context.Background()
	if q.cancel > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		timer := time.AfterFunc(q.cancel, cancel)
		defer timer.Stop()
		defer cancel()
	}
	var (
		req  *http.Request
		err  error
		want []byte
	)
	if q.gen {
		url := fmt.Sprintf("%s/gen?id=%d&n=%d&chunk=%d&len=%d", base, q.id, q.size, q.chunk, boolInt(q.len))
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	} else {
		want = make([]byte, q.size)
		byteStream(q.id).Read(want)
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/echo?id=%d", base, q.id), bytes.NewReader(want))
		if err == nil {
			req.Header.Set("X-Sum", fmt.Sprintf("%016x", fnv64(want)))
		}
	}
	if err != nil {
		return httpOutcome{err: err}
	}
	cancelled := func(err error) httpOutcome {
		if q.cancel > 0 && errors.Is(err, context.Canceled) {
			return httpOutcome{}
		}
		return httpOutcome{err: fmt.Errorf("request %d (%s, %d bytes): %w", q.id, req.URL.Path, q.size, err)}
	}
	resp, err := c.Do(req)
	if err != nil {
		return cancelled(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return httpOutcome{err: fmt.Errorf("request %d (%s): status %s: %s", q.id, req.URL.Path, resp.Status, b)}
	}
	v := verifier{src: byteStream(q.id)}
	buf := make([]byte, 32<<10)
	if q.slow {
		buf = buf[:4<<10]
	}
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if err := v.check(buf[:n]); err != nil {
				return httpOutcome{err: fmt.Errorf("request %d (%s): %w", q.id, req.URL.Path, err)}
			}
			if q.slow {
				time.Sleep(200 * time.Microsecond)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return cancelled(err)
		}
	}
	if v.n != int64(q.size) {
		return httpOutcome{err: fmt.Errorf("request %d (%s): %d bytes of the %d expected", q.id, req.URL.Path, v.n, q.size)}
	}
	if !q.gen && resp.Header.Get("X-Sum") != req.Header.Get("X-Sum") {
		return httpOutcome{err: fmt.Errorf("request %d: X-Sum %s, sent %s", q.id, resp.Header.Get("X-Sum"), req.Header.Get("X-Sum"))}
	}
	return httpOutcome{done: true}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rawResetRequest writes the header of a POST /echo announcing size bytes and part of
// the body on a raw connection, then resets it (SO_LINGER 0) or closes it.
func rawResetRequest(addr string, q httpReq, linger0 bool) error {
	c, err := dialLoopback(addr)
	if err != nil {
		return fmt.Errorf("raw request %d: dial: %w", q.id, err)
	}
	defer c.Close()
	size := max(q.size, 2)
	body := make([]byte, size/2)
	byteStream(q.id).Read(body)
	msg := fmt.Appendf(nil, "POST /echo?id=%d HTTP/1.1\r\nHost: stress\r\nX-Sum: 0\r\nContent-Length: %d\r\n\r\n", q.id, size)
	if _, err := c.Write(append(msg, body...)); err != nil {
		return fmt.Errorf("raw request %d: write: %w", q.id, err)
	}
	if linger0 {
		c.SetLinger(0)
	}
	return nil
}

// TestHTTPLoad runs every server of httpServers on each backend under keep-alive,
// one-shot, cancelling and resetting clients, with slow readers among them. Proves:
// every completed response carries exactly the bytes expected (echo bodies checked by
// checksum on the server and byte for byte on the client; generated bodies, chunked
// or with a length, byte for byte); each completed request reached the handler exactly
// once (no retry, nothing answered twice), a cancelled one at most once; a request
// whose connection is reset mid-body reaches the handler at most once, with a read
// error, and costs nothing else; the server shuts down gracefully afterwards and no
// goroutine or descriptor is left.
func TestHTTPLoad(t *testing.T) {
	for _, hs := range httpServers {
		t.Run(hs.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, cfg blitzio.Config) {
				leakCheck(t)
				r := seeded(t)
				rt := newNetRuntime(t, cfg)
				led := newHTTPLedger()
				addr, stop := hs.start(t, rt, loadHandler(led))
				base := "http://" + addr

				counts := map[httpClientKind]int{
					keepAlive: scaled(32, 2), oneShot: scaled(12, 2), canceller: scaled(8, 2), rawReset: scaled(8, 2),
				}
				perClient := scaled(12, 2)
				type client struct {
					kind httpClientKind
					reqs []httpReq
				}
				var clients []client
				kinds := map[uint64]httpClientKind{}
				for kind := keepAlive; kind <= rawReset; kind++ {
					for range counts[kind] {
						cl := client{kind: kind}
						for range perClient {
							id := r.Uint64() >> 1
							for _, dup := kinds[id]; dup; _, dup = kinds[id] {
								id = r.Uint64() >> 1
							}
							kinds[id] = kind
							cl.reqs = append(cl.reqs, planHTTPReq(r, id, kind))
						}
						clients = append(clients, cl)
					}
				}
				linger0 := r.Uint64()
				shared := &http.Transport{MaxIdleConnsPerHost: counts[keepAlive] + counts[canceller]}
				oneShotTr := &http.Transport{DisableKeepAlives: true}
				defer shared.CloseIdleConnections()
				defer oneShotTr.CloseIdleConnections()

				var (
					mu       sync.Mutex
					errs     []error
					done     = map[uint64]bool{}
					finished int
				)
				watchdog(t, "HTTP load", netPhaseLimit, func() {
					var wg sync.WaitGroup
					for ci, cl := range clients {
						wg.Go(func() {
							hc := &http.Client{Transport: shared}
							if cl.kind == oneShot {
								hc.Transport = oneShotTr
							}
							for _, q := range cl.reqs {
								var o httpOutcome
								if cl.kind == rawReset {
									o.err = rawResetRequest(addr, q, (linger0>>(ci%64))&1 == 1)
								} else {
									o = doHTTP(hc, base, q)
								}
								mu.Lock()
								if o.err != nil {
									errs = append(errs, fmt.Errorf("%v client: %w", cl.kind, o.err))
								}
								if o.done {
									done[q.id] = true
									finished++
								}
								mu.Unlock()
								if q.pause > 0 {
									time.Sleep(q.pause)
								}
							}
						})
					}
					wg.Wait()
				})
				reportErrors(t, "HTTP", errs)
				shared.CloseIdleConnections()
				oneShotTr.CloseIdleConnections()
				stop()

				var cancelledSeen, resetSeen int
				for id, kind := range kinds {
					n, err := led.get(id)
					switch {
					case done[id]:
						if n != 1 || err != nil {
							t.Errorf("completed request %d (%v): reached the handler %d times, handler error %v; want once, no error", id, kind, n, err)
						}
					case kind == keepAlive || kind == oneShot:
						// Already failed above (every request of these clients completes).
					case n > 1:
						t.Errorf("%v request %d reached the handler %d times", kind, id, n)
					case kind == rawReset && n == 1:
						resetSeen++
						if err == nil || errors.Is(err, errCorrupt) {
							t.Errorf("request %d, reset mid-body, ended in the handler with %v; want a body read error", id, err)
						}
					case kind == canceller:
						cancelledSeen += n
					}
				}
				t.Logf("%d clients, %d requests: %d completed and checked; cancelled requests seen by the handler: %d; reset requests seen by the handler: %d",
					len(clients), len(kinds), finished, cancelledSeen, resetSeen)
			})
		})
	}
}
