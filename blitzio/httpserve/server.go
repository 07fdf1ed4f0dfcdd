//go:build linux || darwin || freebsd

package httpserve

import (
	"context"
	"errors"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// DefaultMaxHeaderBytes is the request head limit when Server.MaxHeaderBytes is 0: 1 MB,
// net/http's default.
const DefaultMaxHeaderBytes = http.DefaultMaxHeaderBytes

// Server serves an http.Handler over HTTP/1.1 on blitzio connections. Its fields are
// those of http.Server that apply; set them before Serve and do not change them after.
// The zero value serves http.DefaultServeMux with no timeouts.
type Server struct {
	// Addr is the TCP address ListenAndServe listens on ("host:port"); "" means ":http".
	Addr string
	// Handler answers the requests; nil means http.DefaultServeMux.
	Handler http.Handler
	// ReadTimeout bounds the reading of a whole request, head and body, from its first
	// byte. A request whose head is late is dropped (the connection closed, no answer); a
	// body read after the deadline fails with os.ErrDeadlineExceeded. Zero means none.
	ReadTimeout time.Duration
	// ReadHeaderTimeout bounds the reading of a request head from its first byte; zero
	// means ReadTimeout.
	ReadHeaderTimeout time.Duration
	// WriteTimeout bounds the writing of a response, from the end of its request's head:
	// a write after it fails with os.ErrDeadlineExceeded. Zero means none.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its next request; zero
	// means ReadTimeout, and none if that is zero too.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request head (431 beyond it); zero means
	// DefaultMaxHeaderBytes. As in net/http, 4096 bytes of slack are allowed.
	MaxHeaderBytes int
	// MaxBodyBytes bounds a request body: a declared Content-Length above it is answered
	// with 413 without calling the handler; a chunked body that grows beyond it fails the
	// handler's Read with a *http.MaxBytesError and the connection is closed after the
	// response. Zero means no limit.
	MaxBodyBytes int64
	// ErrorLog receives handler panics and accept errors; nil means the log package's
	// standard logger.
	ErrorLog *log.Logger
	// Coordinator, when set, joins the server to a blitzio.Shutdown: each request in
	// flight holds one of its WorkGuards (so Shutdown.Wait waits for the requests being
	// served), the server stops accepting and closes its idle connections as soon as the
	// shutdown is triggered, and Serve registers the server's Shutdown as a hook, so that
	// Wait returns with the server stopped. See ExampleServer_coordinator.
	Coordinator *blitzio.Shutdown
	// DisableKeepAlives answers every request with "Connection: close".
	DisableKeepAlives bool

	mu         sync.Mutex
	conns      map[*conn]struct{}
	listeners  map[*listener]struct{}
	connsGone  chan struct{} // closed when shutting down and no connection is left
	hooked     bool          // registered with Coordinator
	inShutdown atomic.Bool
	pool       handlerPool
	onShutdown []func()
}

// ErrNoRuntime is returned by Serve when given a nil runtime or listener.
var ErrNoRuntime = errors.New("httpserve: Serve needs a runtime and a listener")

func (srv *Server) logf(format string, args ...any) {
	if srv.ErrorLog != nil {
		srv.ErrorLog.Printf(format, args...)
	} else {
		log.Printf(format, args...)
	}
}

func (srv *Server) handler() http.Handler {
	if srv.Handler != nil {
		return srv.Handler
	}
	return http.DefaultServeMux
}

func (srv *Server) maxHeaderBytes() int {
	n := srv.MaxHeaderBytes
	if n <= 0 {
		n = DefaultMaxHeaderBytes
	}
	return min(n, math.MaxInt-4096) + 4096 // no overflow for a limit near math.MaxInt
}

func (srv *Server) idleTimeout() time.Duration {
	if srv.IdleTimeout != 0 {
		return srv.IdleTimeout
	}
	return srv.ReadTimeout
}

func (srv *Server) headerTimeout() time.Duration {
	if srv.ReadHeaderTimeout != 0 {
		return srv.ReadHeaderTimeout
	}
	return srv.ReadTimeout
}

// listener is one listener being served: its accept function and its closer.
type listener struct {
	accept func() blitzio.Future[blitzio.Result[acceptedConn]]
	close  func() error
	addr   net.Addr
}

type acceptedConn struct {
	s connStream
}

// Serve accepts connections on l and serves each with one blitzio task on rt (see the
// package documentation), until Shutdown or Close, after which it returns
// http.ErrServerClosed; it returns the accept error that stopped it otherwise. Serve
// blocks the calling goroutine: call it from a plain goroutine (main or one of yours),
// never from a task. The server owns l: Shutdown and Close close it.
func (srv *Server) Serve(rt *blitzio.Runtime, l *blitzio.TCPListener) error {
	if rt == nil || l == nil {
		return ErrNoRuntime
	}
	return srv.serve(rt, &listener{addr: l.Addr(), close: l.Close, accept: func() blitzio.Future[blitzio.Result[acceptedConn]] {
		return blitzio.Map(l.Accept(), func(r blitzio.Result[blitzio.Accepted]) blitzio.Result[acceptedConn] {
			if r.Err != nil {
				return blitzio.Result[acceptedConn]{Err: r.Err}
			}
			return blitzio.Result[acceptedConn]{Value: acceptedConn{s: r.Value.Conn}}
		})
	}})
}

// ServeUnix is Serve on a Unix-domain stream listener.
func (srv *Server) ServeUnix(rt *blitzio.Runtime, l *blitzio.UnixListener) error {
	if rt == nil || l == nil {
		return ErrNoRuntime
	}
	return srv.serve(rt, &listener{addr: l.Addr(), close: l.Close, accept: func() blitzio.Future[blitzio.Result[acceptedConn]] {
		return blitzio.Map(l.Accept(), func(r blitzio.Result[*blitzio.UnixStream]) blitzio.Result[acceptedConn] {
			if r.Err != nil {
				return blitzio.Result[acceptedConn]{Err: r.Err}
			}
			return blitzio.Result[acceptedConn]{Value: acceptedConn{s: r.Value}}
		})
	}})
}

// ListenAndServe listens on srv.Addr (TCP) and calls Serve.
func (srv *Server) ListenAndServe(rt *blitzio.Runtime) error {
	if srv.inShutdown.Load() {
		return http.ErrServerClosed
	}
	addr := srv.Addr
	if addr == "" {
		addr = ":http"
	}
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return err
	}
	l, err := blitzio.ListenTCP("tcp", ta)
	if err != nil {
		return err
	}
	return srv.Serve(rt, l)
}

func (srv *Server) serve(rt *blitzio.Runtime, l *listener) error {
	srv.mu.Lock()
	if srv.inShutdown.Load() {
		srv.mu.Unlock()
		l.close()
		return http.ErrServerClosed
	}
	if srv.listeners == nil {
		srv.listeners = map[*listener]struct{}{}
	}
	srv.listeners[l] = struct{}{}
	if srv.pool.maxIdle == 0 {
		srv.pool.maxIdle = maxIdleWorkers()
	}
	hook := srv.Coordinator != nil && !srv.hooked
	srv.hooked = srv.hooked || hook
	srv.mu.Unlock()
	if hook {
		co := srv.Coordinator
		co.OnShutdown(srv.Shutdown)
		// Stop accepting and close idle connections as soon as the shutdown is
		// triggered, not only when Wait runs the hook after the requests in flight.
		blitzio.Spawn(rt, blitzio.Map(co.Done(), func(struct{}) struct{} {
			srv.beginShutdown()
			return struct{}{}
		})).Detach()
	}
	h := blitzio.Spawn(rt, &acceptLoop{srv: srv, l: l, rt: rt})
	err, jerr := h.Wait()
	srv.mu.Lock()
	delete(srv.listeners, l)
	srv.mu.Unlock()
	if srv.inShutdown.Load() {
		return http.ErrServerClosed
	}
	if jerr != nil {
		return jerr
	}
	return err
}

// acceptLoop is the task that accepts connections and spawns one conn task for each.
type acceptLoop struct {
	srv *Server
	l   *listener
	rt  *blitzio.Runtime
	f   blitzio.Future[blitzio.Result[acceptedConn]]
}

func (a *acceptLoop) Poll(cx *blitzio.Context) (error, bool) {
	for {
		if a.f == nil {
			a.f = a.l.accept()
		}
		r, ok := a.f.Poll(cx)
		if !ok {
			return nil, false
		}
		a.f = nil
		if r.Err != nil {
			if errors.Is(r.Err, net.ErrClosed) || a.srv.inShutdown.Load() {
				return nil, true
			}
			return r.Err, true
		}
		c := newConn(a.srv, a.rt, r.Value)
		if !a.srv.track(c) {
			r.Value.s.Close()
			return nil, true
		}
		blitzio.Spawn(cx, c).Detach()
	}
}

// Drop closes the listener's pending accept (the runtime shutting down).
func (a *acceptLoop) Drop() {
	if a.f != nil {
		blitzio.Drop(a.f)
		a.f = nil
	}
}

func (srv *Server) track(c *conn) bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.inShutdown.Load() {
		return false
	}
	if srv.conns == nil {
		srv.conns = map[*conn]struct{}{}
	}
	srv.conns[c] = struct{}{}
	return true
}

func (srv *Server) untrack(c *conn) {
	srv.mu.Lock()
	delete(srv.conns, c)
	if len(srv.conns) == 0 && srv.connsGone != nil && srv.inShutdown.Load() {
		select {
		case <-srv.connsGone:
		default:
			close(srv.connsGone)
		}
	}
	srv.mu.Unlock()
}

// beginShutdown stops accepting, marks the server as shutting down and wakes every
// connection task, so idle ones close and busy ones close after their response. It
// returns the channel closed when no connection is left.
func (srv *Server) beginShutdown() chan struct{} {
	srv.mu.Lock()
	first := !srv.inShutdown.Load()
	srv.inShutdown.Store(true)
	if srv.connsGone == nil {
		srv.connsGone = make(chan struct{})
		if len(srv.conns) == 0 {
			close(srv.connsGone)
		}
	}
	ls := make([]*listener, 0, len(srv.listeners))
	for l := range srv.listeners {
		ls = append(ls, l)
	}
	cs := make([]*conn, 0, len(srv.conns))
	for c := range srv.conns {
		cs = append(cs, c)
	}
	gone := srv.connsGone
	hooks := srv.onShutdown
	srv.mu.Unlock()
	for _, l := range ls {
		l.close()
	}
	for _, c := range cs {
		c.wakeTask()
	}
	if first {
		for _, f := range hooks {
			go f()
		}
	}
	return gone
}

// Shutdown stops the server gracefully, with the contract of http.Server.Shutdown: it
// closes the listeners, closes the idle connections, and waits for the connections
// serving a request to finish their response and close, until ctx is done; then it
// returns ctx.Err() (and the connections still busy are left to finish on their own;
// call Close to cut them). Serve returns http.ErrServerClosed at once. Hijacked
// connections are not tracked. Shutdown blocks: call it from a plain goroutine, or from
// a task through blitzio.SpawnBlocking.
func (srv *Server) Shutdown(ctx context.Context) error {
	gone := srv.beginShutdown()
	select {
	case <-gone:
		srv.pool.closeIdle()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the server at once, like http.Server.Close: it closes the listeners and
// every tracked connection, idle or busy (a handler's next read or write fails). It does
// not wait for handlers to return.
func (srv *Server) Close() error {
	srv.beginShutdown()
	srv.mu.Lock()
	cs := make([]*conn, 0, len(srv.conns))
	for c := range srv.conns {
		cs = append(cs, c)
	}
	srv.mu.Unlock()
	for _, c := range cs {
		c.abort()
	}
	srv.pool.closeIdle()
	return nil
}

// RegisterOnShutdown registers f to run, on a goroutine of its own, when Shutdown or
// Close begins (as http.Server.RegisterOnShutdown): to tell hijacked connections, such
// as WebSockets, to close.
func (srv *Server) RegisterOnShutdown(f func()) {
	srv.mu.Lock()
	srv.onShutdown = append(srv.onShutdown, f)
	srv.mu.Unlock()
}

// isTimeout reports a deadline error, for tests and logging.
func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
