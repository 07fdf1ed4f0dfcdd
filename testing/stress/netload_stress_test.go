//go:build linux

package stress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// TCP servers under load. A blitzio server (tasks over blitzio.ListenTCP) is driven by
// plain Go clients (net.Dial on Go's own netpoller, so the checks do not depend on the
// code under test) at many more connections than cores, with randomised message sizes,
// pauses and disconnects, on the epoll and the io_uring backends. Every byte a client
// receives is compared with what it sent; every connection the server accepted is
// reported by its handler exactly once, and the report is matched with the client's
// session (by the session id the client sends first); afterwards no goroutine or file
// descriptor is left.
//
// The helpers here (the server, the sessions, the byte streams) are shared by the
// HTTP and fault scenarios of this package.

// Bounds of the network scenarios. Every wait is bounded: a client's socket has a
// deadline, each phase has a watchdog that fails with every goroutine's stack.
const (
	netPhaseLimit  = 90 * time.Second // a load phase, start to end
	clientDeadline = 60 * time.Second // a client connection's deadline
	netStopLimit   = 30 * time.Second // closing a listener, a runtime, resolving handles
)

// netBackends are the I/O backends the network scenarios run on; io_uring is skipped,
// with the kernel's reason, where the kernel refuses it.
var netBackends = []blitzio.Backend{blitzio.BackendEpoll, blitzio.BackendIOUring}

// forEachBackend runs body as a subtest per backend, with a runtime Config for it.
func forEachBackend(t *testing.T, body func(t *testing.T, cfg blitzio.Config)) {
	for _, b := range netBackends {
		t.Run(b.String(), func(t *testing.T) {
			cfg := blitzio.Config{Workers: 2, Backend: b}
			rt, err := blitzio.New(cfg)
			if err != nil {
				if b == blitzio.BackendIOUring && errors.Is(err, blitzio.ErrBackendUnavailable) {
					t.Skipf("io_uring unavailable here: %v", err)
				}
				t.Fatalf("blitzio.New(%+v): %v", cfg, err)
			}
			rt.Close()
			body(t, cfg)
		})
	}
}

// forEachBackendTimed is forEachBackend for scenarios that wait out a timeout of
// seconds: with -short they run once, on the automatic choice (io_uring where the
// kernel allows it, else epoll).
func forEachBackendTimed(t *testing.T, body func(t *testing.T, cfg blitzio.Config)) {
	if !testing.Short() {
		forEachBackend(t, body)
		return
	}
	t.Run("auto", func(t *testing.T) { body(t, blitzio.Config{Workers: 2}) })
}

// newNetRuntime starts a runtime for a scenario and closes it, under a watchdog, when
// the test ends (before the leak check registered earlier runs).
func newNetRuntime(t *testing.T, cfg blitzio.Config) *blitzio.Runtime {
	t.Helper()
	rt, err := blitzio.New(cfg)
	if err != nil {
		t.Fatalf("blitzio.New(%+v): %v", cfg, err)
	}
	if b, _ := rt.Backend(); cfg.Backend != blitzio.BackendAuto && b != cfg.Backend {
		t.Fatalf("runtime asked for %v runs on %v", cfg.Backend, b)
	}
	t.Cleanup(func() { watchdog(t, "closing the runtime", netStopLimit, func() { rt.Close() }) })
	return rt
}

// connReport is what a server's connection handler reports when it returns: the
// session id the client sent first (valid when hasID), the bytes or frames it read and
// wrote, and the error that ended the connection (nil for a clean end of stream).
type connReport struct {
	id      uint64
	hasID   bool
	in, out int64
	frames  int
	err     error
	last    []byte // the request a codec server refused as malformed
	sum     uint64 // FNV-1a of what a sink read after the id
}

// takeID records the session id from the first 8 bytes read on a connection, p being
// the bytes just read and seen the count read before them.
func (r *connReport) takeID(p []byte, seen int64, idBuf *[8]byte) {
	if seen >= 8 {
		return
	}
	n := copy(idBuf[seen:], p)
	if seen+int64(n) == 8 {
		r.id, r.hasID = binary.BigEndian.Uint64(idBuf[:]), true
	}
}

// connHandler serves one accepted connection, filling rep. n numbers the connections
// of the server from 0, in accept order. The server closes the connection when the
// handler returns.
type connHandler func(co *blitzio.Co, c *blitzio.TCPStream, n int, rep *connReport)

// tcpServer is a blitzio TCP server on the loopback: a task accepting connections and
// a task per connection running a connHandler.
type tcpServer struct {
	rt       *blitzio.Runtime
	l        *blitzio.TCPListener
	loop     blitzio.JoinHandle[error]
	loopDone atomic.Bool  // the accept loop has returned
	accepted atomic.Int64 // connections accepted
	live     atomic.Int64 // handlers running
	mu       sync.Mutex
	conns    []blitzio.JoinHandle[connReport]
}

// startTCPServer listens on 127.0.0.1 and serves every connection with h on rt.
func startTCPServer(t *testing.T, rt *blitzio.Runtime, h connHandler) *tcpServer {
	t.Helper()
	l, err := blitzio.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatalf("ListenTCP: %v", err)
	}
	s := &tcpServer{rt: rt, l: l}
	s.loop = blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) error {
		defer s.loopDone.Store(true)
		for {
			a, err := blitzio.Await(co, l.Accept()).Get()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return nil
				}
				return fmt.Errorf("accept: %w", err)
			}
			n := int(s.accepted.Add(1) - 1)
			s.live.Add(1)
			c := a.Conn
			// end closes the connection and counts the handler out, once, however the
			// task ends: returning, panicking, dropped while it waits (Abort, a runtime
			// shutdown), or dropped before its first poll.
			end := sync.OnceFunc(func() {
				c.Close()
				s.live.Add(-1)
			})
			handler := blitzio.Async(func(co *blitzio.Co) (rep connReport) {
				defer end() // runs on return, on a panic, and when a Drop unwinds fn
				h(co, c, n, &rep)
				return rep
			})
			// An Async future dropped before its first poll never runs fn, so fn's
			// deferred end would not run: the connection would stay open, its client
			// waiting forever. WithDrop calls end then, and drops the Async future
			// after it (unwinding a suspended fn).
			hd := blitzio.Spawn(co, blitzio.WithDrop(handler, end))
			s.mu.Lock()
			s.conns = append(s.conns, hd)
			s.mu.Unlock()
		}
	}))
	// A test that fails before stop must still close the listener (its descriptor).
	t.Cleanup(func() { l.Close() })
	return s
}

// addr returns the address clients dial.
func (s *tcpServer) addr() string { return s.l.Addr().String() }

// quiesce waits until the server has accepted want connections and every handler has
// returned: the clients have all gone and the server saw each of them go.
func (s *tcpServer) quiesce(t *testing.T, want int) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("server: %d connections accepted and all handlers returned (now %d accepted, %d running)",
		want, s.accepted.Load(), s.live.Load()), netStopLimit, func() bool {
		return s.accepted.Load() >= int64(want) && s.live.Load() == 0
	})
	if got := s.accepted.Load(); got != int64(want) {
		t.Fatalf("server accepted %d connections; the clients made %d", got, want)
	}
}

// stop closes the listener, requires the accept loop to end without error and every
// connection handle to resolve, and returns the handlers' reports in accept order. A
// handle that resolves with an error (a panic in a handler, a cancelled task) fails t.
func (s *tcpServer) stop(t *testing.T) []connReport {
	t.Helper()
	s.l.Close()
	if err, werr, ok := waitHandle(s.loop, netStopLimit); !ok {
		t.Fatalf("the accept loop did not end %v after its listener was closed; goroutines:\n%s", netStopLimit, stacks())
	} else if werr != nil || err != nil {
		t.Fatalf("accept loop: task error %v, loop error %v", werr, err)
	}
	s.mu.Lock()
	conns := slices.Clone(s.conns)
	s.mu.Unlock()
	reps := make([]connReport, len(conns))
	for i, h := range conns {
		rep, err, ok := waitHandle(h, netStopLimit)
		if !ok {
			t.Fatalf("connection %d: handle not resolved %v after the load ended (lost); goroutines:\n%s", i, netStopLimit, stacks())
		}
		if err != nil {
			t.Errorf("connection %d: handler failed: %v", i, err)
		}
		reps[i] = rep
	}
	return reps
}

// byID indexes reports by session id, failing t on a report without an id or an id
// reported twice (a connection answered twice).
func byID(t *testing.T, reps []connReport) map[uint64]connReport {
	t.Helper()
	m := make(map[uint64]connReport, len(reps))
	for i, r := range reps {
		if !r.hasID {
			t.Errorf("connection %d ended before its session id arrived: in %d, err %v", i, r.in, r.err)
			continue
		}
		if _, dup := m[r.id]; dup {
			t.Errorf("session %#x reported by two connections", r.id)
		}
		m[r.id] = r
	}
	return m
}

// isPeerGone reports whether err is how a socket reports a peer that reset or left:
// ECONNRESET or EPIPE in a *net.OpError.
func isPeerGone(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
}

// byteStream returns the deterministic byte stream of session id: what a client
// sends, and what it checks the echo against. The run's seed is mixed in, so a replay
// sends the same bytes.
func byteStream(id uint64) *rand.ChaCha8 {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], id)
	binary.LittleEndian.PutUint64(s[8:], runSeed())
	return rand.NewChaCha8(s)
}

// verifier checks a received stream byte by byte against its expected source: first
// prefix, then src.
type verifier struct {
	prefix []byte
	src    *rand.ChaCha8
	n      int64 // bytes checked
	want   []byte
}

// errCorrupt marks a byte that differs from what was sent: the one failure no fault
// excuses.
var errCorrupt = errors.New("corrupt stream")

// check verifies the next len(p) bytes of the stream.
func (v *verifier) check(p []byte) error {
	if cap(v.want) < len(p) {
		v.want = make([]byte, len(p))
	}
	want := v.want[:len(p)]
	k := 0
	for ; k < len(p) && v.n+int64(k) < int64(len(v.prefix)); k++ {
		want[k] = v.prefix[v.n+int64(k)]
	}
	v.src.Read(want[k:])
	if !bytes.Equal(p, want) {
		i := 0
		for p[i] == want[i] {
			i++
		}
		return fmt.Errorf("%w: byte %d is %#02x, want %#02x", errCorrupt, v.n+int64(i), p[i], want[i])
	}
	v.n += int64(len(p))
	return nil
}

// msgSize draws a message size: mostly small, some of a few kilobytes, a few up to
// large bytes, so that both one-read messages and messages spanning many reads, partial
// writes and full socket buffers occur.
func msgSize(r *rand.Rand, large int) int {
	switch x := r.IntN(100); {
	case x < 70:
		return 1 + r.IntN(512)
	case x < 95:
		return 513 + r.IntN(16<<10)
	default:
		return 16<<10 + r.IntN(large)
	}
}

// sessionPlan is what one client connection does: its id, its messages' sizes and the
// pause after each, and whether it disconnects part way through message abortAt (with
// an RST when linger0) instead of ending cleanly with a half-close.
type sessionPlan struct {
	id      uint64
	sizes   []int
	pauses  []time.Duration
	abortAt int // -1: clean end
	linger0 bool
}

// total returns the bytes a clean session sends after its id.
func (p sessionPlan) total() int64 {
	var n int64
	for _, s := range p.sizes {
		n += int64(s)
	}
	return n
}

// planSession draws a session plan. abortPct is the chance in percent of a disconnect.
func planSession(r *rand.Rand, id uint64, maxMsgs, large, abortPct int) sessionPlan {
	p := sessionPlan{id: id, abortAt: -1}
	n := 1 + r.IntN(maxMsgs)
	for range n {
		p.sizes = append(p.sizes, msgSize(r, large))
		var d time.Duration
		if r.IntN(5) == 0 {
			d = time.Duration(r.IntN(2000)) * time.Microsecond
		}
		p.pauses = append(p.pauses, d)
	}
	if r.IntN(100) < abortPct {
		p.abortAt = r.IntN(n)
		p.linger0 = r.IntN(2) == 0
	}
	return p
}

// dialLoopback dials addr with Go's net package, with clientDeadline on the connection.
func dialLoopback(addr string) (*net.TCPConn, error) {
	d := net.Dialer{Timeout: clientDeadline}
	c, err := d.Dial("tcp4", addr)
	if err != nil {
		return nil, err
	}
	tc := c.(*net.TCPConn)
	tc.SetDeadline(time.Now().Add(clientDeadline))
	return tc, nil
}

// idHeader is the 8 bytes a session starts with.
func idHeader(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

// runEchoSession runs plan p against an echo server at addr: it writes the session id
// and the messages (pausing as planned) while a second goroutine reads the echo and
// checks every byte. A clean session half-closes and requires the echo of every byte
// and then the end of stream; an aborting one waits until the server has echoed its id
// (so the server has its report), writes half of message abortAt and closes, and
// requires only that what came back was right.
func runEchoSession(addr string, p sessionPlan) error {
	c, err := dialLoopback(addr)
	if err != nil {
		return fmt.Errorf("session %#x: dial: %w", p.id, err)
	}
	defer c.Close()
	hdr := idHeader(p.id)
	var got atomic.Int64
	readDone := make(chan error, 1)
	go func() {
		v := verifier{prefix: hdr, src: byteStream(p.id)}
		buf := make([]byte, 8<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if err := v.check(buf[:n]); err != nil {
					readDone <- err
					return
				}
				got.Store(v.n)
			}
			if err == io.EOF {
				if p.abortAt < 0 && v.n != 8+p.total() {
					err = fmt.Errorf("end of stream after %d bytes of the %d sent", v.n, 8+p.total())
				} else {
					err = nil
				}
				readDone <- err
				return
			}
			if err != nil {
				readDone <- err
				return
			}
		}
	}()
	src := byteStream(p.id)
	if _, err := c.Write(hdr); err != nil {
		return fmt.Errorf("session %#x: write id: %w", p.id, err)
	}
	var buf []byte
	for i, n := range p.sizes {
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		msg := buf[:n]
		src.Read(msg)
		if i == p.abortAt {
			deadline := time.Now().Add(clientDeadline)
			for got.Load() < 8 && time.Now().Before(deadline) {
				time.Sleep(100 * time.Microsecond)
			}
			if got.Load() < 8 {
				return fmt.Errorf("session %#x: the server echoed nothing in %v", p.id, clientDeadline)
			}
			if _, err := c.Write(msg[:n/2]); err != nil {
				return fmt.Errorf("session %#x: write before the disconnect: %w", p.id, err)
			}
			if p.linger0 {
				c.SetLinger(0)
			}
			c.Close()
			if err := <-readDone; errors.Is(err, errCorrupt) {
				return fmt.Errorf("session %#x (disconnecting): %w", p.id, err)
			}
			return nil
		}
		if _, err := c.Write(msg); err != nil {
			return fmt.Errorf("session %#x: write message %d (%d bytes): %w", p.id, i, n, err)
		}
		if p.pauses[i] > 0 {
			time.Sleep(p.pauses[i])
		}
	}
	if err := c.CloseWrite(); err != nil {
		return fmt.Errorf("session %#x: CloseWrite: %w", p.id, err)
	}
	if err := <-readDone; err != nil {
		return fmt.Errorf("session %#x: reading the echo: %w", p.id, err)
	}
	return nil
}

// echoHandler echoes everything a connection sends until its end of stream, through a
// buffer whose size varies with the connection (from one read per message to many).
func echoHandler(co *blitzio.Co, c *blitzio.TCPStream, n int, rep *connReport) {
	buf := make([]byte, []int{512, 4 << 10, 32 << 10}[n%3])
	var idBuf [8]byte
	for {
		k, err := blitzio.Await(co, c.Read(buf)).Get()
		if err != nil {
			if err != io.EOF {
				rep.err = err
			}
			return
		}
		rep.takeID(buf[:k], rep.in, &idBuf)
		rep.in += int64(k)
		w, err := blitzio.Await(co, c.WriteAll(buf[:k])).Get()
		rep.out += int64(w)
		if err != nil {
			rep.err = err
			return
		}
	}
}

// runClients runs clients client goroutines at once, each running its sessions one
// after the other, and returns every session's error.
func runClients(plans [][]sessionPlan, run func(p sessionPlan) error) []error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, ps := range plans {
		wg.Go(func() {
			for _, p := range ps {
				if err := run(p); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return errs
}

// planClients draws clients × sessions session plans with plan, called with a fresh
// random id (a plan may choose its own id); the ids are unique.
func planClients(r *rand.Rand, clients, sessions int, plan func(id uint64) sessionPlan) ([][]sessionPlan, map[uint64]sessionPlan) {
	all := make(map[uint64]sessionPlan)
	plans := make([][]sessionPlan, clients)
	for i := range plans {
		for range sessions {
			p := plan(r.Uint64() | 1) // never 0
			for _, dup := all[p.id]; dup; _, dup = all[p.id] {
				p = plan(r.Uint64() | 1)
			}
			all[p.id] = p
			plans[i] = append(plans[i], p)
		}
	}
	return plans, all
}

// reportErrors fails t with the first few errors and their count.
func reportErrors(t *testing.T, what string, errs []error) {
	t.Helper()
	for i, err := range errs {
		if i == 10 {
			t.Errorf("%s: ... %d errors in all", what, len(errs))
			break
		}
		t.Errorf("%s: %v", what, err)
	}
}

// checkEchoReports matches the server's reports with the sessions: a clean session's
// connection ended without error having echoed every byte, a disconnecting one's
// ended cleanly or with the peer's reset, never with anything else.
func checkEchoReports(t *testing.T, reps []connReport, sessions map[uint64]sessionPlan) (clean, aborted int) {
	t.Helper()
	got := byID(t, reps)
	if len(got) != len(sessions) {
		t.Errorf("the server reported %d sessions; the clients ran %d", len(got), len(sessions))
	}
	for id, p := range sessions {
		r, ok := got[id]
		switch {
		case !ok:
			t.Errorf("session %#x: no server report (connection lost)", id)
		case p.abortAt < 0:
			clean++
			if r.err != nil || r.in != 8+p.total() || r.out != r.in {
				t.Errorf("session %#x (clean): server read %d, wrote %d, err %v; want %d both ways and no error",
					id, r.in, r.out, r.err, 8+p.total())
			}
		default:
			aborted++
			if r.err != nil && !isPeerGone(r.err) {
				t.Errorf("session %#x (disconnected, linger0 %v): server error %v; want none, ECONNRESET or EPIPE", id, p.linger0, r.err)
			}
			if r.out > r.in {
				t.Errorf("session %#x: server wrote %d bytes, more than the %d it read", id, r.out, r.in)
			}
		}
	}
	return clean, aborted
}

// TestNetLoadTCPEcho runs a blitzio echo server on each backend under many concurrent
// Go clients (several times more connections than cores, two goroutines each), with
// random message sizes up to a few hundred kilobytes, random pauses, and clients that
// disconnect part way (a close with unread data, or an RST). Proves: every byte echoed
// is the byte sent, in order; every clean session is echoed completely and ended by
// the server at the client's half-close; a disconnect costs the server nothing but an
// ECONNRESET/EPIPE on that connection; every accepted connection's handler returns
// and reports once; no goroutine or descriptor is left.
func TestNetLoadTCPEcho(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg blitzio.Config) {
		leakCheck(t)
		r := seeded(t)
		rt := newNetRuntime(t, cfg)
		srv := startTCPServer(t, rt, echoHandler)
		clients, sessions := scaled(128, 4), scaled(8, 2)
		plans, all := planClients(r, clients, sessions, func(id uint64) sessionPlan {
			return planSession(r, id, 12, 192<<10, 15)
		})
		var errs []error
		watchdog(t, "echo load", netPhaseLimit, func() {
			errs = runClients(plans, func(p sessionPlan) error { return runEchoSession(srv.addr(), p) })
		})
		reportErrors(t, "echo client", errs)
		srv.quiesce(t, len(all))
		clean, aborted := checkEchoReports(t, srv.stop(t), all)
		t.Logf("%d clients, %d sessions (%d clean, %d disconnected)", clients, len(all), clean, aborted)
	})
}

// blitzioEchoSession is runEchoSession written as a blitzio task: the client side of
// the session on a second runtime, dialled with blitzio.DialTCP, its stream split into
// halves written and read by two Async functions joined with Join2. Sessions end
// cleanly (a half-close), pausing on the runtime's timers.
func blitzioEchoSession(co *blitzio.Co, addr *net.TCPAddr, p sessionPlan) error {
	c, err := blitzio.Await(co, blitzio.DialTCP("tcp4", nil, addr)).Get()
	if err != nil {
		return fmt.Errorf("session %#x: dial: %w", p.id, err)
	}
	defer c.Close()
	rd, wr := c.Split()
	writer := blitzio.Async(func(co *blitzio.Co) error {
		src := byteStream(p.id)
		if _, err := blitzio.Await(co, wr.WriteAll(idHeader(p.id))).Get(); err != nil {
			return fmt.Errorf("write id: %w", err)
		}
		var buf []byte
		for i, n := range p.sizes {
			if cap(buf) < n {
				buf = make([]byte, n)
			}
			src.Read(buf[:n])
			if _, err := blitzio.Await(co, wr.WriteAll(buf[:n])).Get(); err != nil {
				return fmt.Errorf("write message %d (%d bytes): %w", i, n, err)
			}
			if p.pauses[i] > 0 {
				blitzio.Await(co, blitzio.Sleep(p.pauses[i]))
			}
		}
		return wr.CloseWrite()
	})
	reader := blitzio.Async(func(co *blitzio.Co) error {
		v := verifier{prefix: idHeader(p.id), src: byteStream(p.id)}
		buf := make([]byte, 8<<10)
		for {
			n, err := blitzio.Await(co, rd.Read(buf)).Get()
			if err == io.EOF {
				if v.n != 8+p.total() {
					return fmt.Errorf("end of stream after %d bytes of the %d sent", v.n, 8+p.total())
				}
				return nil
			}
			if err != nil {
				return err
			}
			if err := v.check(buf[:n]); err != nil {
				return err
			}
		}
	})
	res := blitzio.Await(co, blitzio.Join2(writer, reader))
	if err := errors.Join(res.V1, res.V2); err != nil {
		return fmt.Errorf("session %#x: %w", p.id, err)
	}
	return nil
}

// TestNetLoadTCPEchoBlitzioClients runs the echo server of TestNetLoadTCPEcho with its
// clients written as blitzio tasks on a second runtime of the same backend (each
// client a task running its sessions in turn, each session a writer and a reader
// Async function over the stream's split halves, joined with Join2). Proves: DialTCP, split halves read and
// written at once, CloseWrite and the timers work under load on the client side as
// well, with every byte checked and every connection reported once by the server.
func TestNetLoadTCPEchoBlitzioClients(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg blitzio.Config) {
		leakCheck(t)
		r := seeded(t)
		rt := newNetRuntime(t, cfg)
		crt := newNetRuntime(t, cfg)
		srv := startTCPServer(t, rt, echoHandler)
		plans, all := planClients(r, scaled(64, 2), scaled(6, 2), func(id uint64) sessionPlan {
			return planSession(r, id, 12, 192<<10, 0)
		})
		var errs []error
		watchdog(t, "echo load from blitzio clients", netPhaseLimit, func() {
			hs := make([]blitzio.JoinHandle[[]error], len(plans))
			for i, ps := range plans {
				hs[i] = blitzio.Spawn(crt, blitzio.Async(func(co *blitzio.Co) []error {
					var errs []error
					for _, p := range ps {
						if err := blitzioEchoSession(co, srv.l.TCPAddr(), p); err != nil {
							errs = append(errs, err)
						}
					}
					return errs
				}))
			}
			for i, h := range hs {
				es, err, ok := waitHandle(h, netPhaseLimit)
				switch {
				case !ok:
					errs = append(errs, fmt.Errorf("client task %d not resolved", i))
				case err != nil:
					errs = append(errs, fmt.Errorf("client task %d: %w", i, err))
				}
				errs = append(errs, es...)
			}
		})
		reportErrors(t, "blitzio echo client", errs)
		srv.quiesce(t, len(all))
		clean, _ := checkEchoReports(t, srv.stop(t), all)
		t.Logf("%d blitzio client tasks, %d sessions checked", len(plans), clean)
	})
}
