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
	"github.com/blitzgo/blitz/blitzio/stream"
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
	// flight holds one of its WorkGuards until its response has been written (so
	// Shutdown.Wait waits for the requests being served and answered), the server stops accepting and closes its idle connections as soon as the
	// shutdown is triggered, and Serve registers the server's Shutdown as a hook, so that
	// Wait returns with the server stopped. See ExampleServer_coordinator.
	Coordinator *blitzio.Shutdown
	// DisableKeepAlives answers every request with "Connection: close".
	DisableKeepAlives bool
	// DisableGeneralOptionsHandler, if true, passes "OPTIONS *" requests to the Handler;
	// otherwise they are answered 200 with "Content-Length: 0", as by net/http.
	DisableGeneralOptionsHandler bool
	// ConnState, when set, is called when a connection changes state, with the states
	// and in the order of http.Server.ConnState: http.StateNew when it is accepted,
	// http.StateActive when the first bytes of a request have been read, http.StateIdle
	// after a response when the connection is kept for the next request (before a
	// pipelined request's StateActive too), http.StateHijacked when a handler hijacks it
	// (the last call for it), http.StateClosed when the server has closed it. The
	// net.Conn is the same for every call on one connection, and is the one Hijack and
	// ConnContext get. The calls for one connection never overlap; they run on the
	// runtime's worker for StateNew, StateActive and StateClosed (so the function must
	// be quick and must not block, as it would stall other connections) and on the
	// handler's goroutine otherwise. A panic in it is logged and closes the connection;
	// so does a runtime.Goexit (which also ends the goroutine that called it).
	// Setting ConnState, BaseContext or ConnContext costs each connection a net.Conn
	// view of its stream (a few hundred bytes, idle or not).
	ConnState func(net.Conn, http.ConnState)
	// BaseContext, when set, returns the context each request's context derives from,
	// for the connections of one listener: it is called once per Serve, with the
	// listener (as a net.Listener: its Addr and Close work; its Accept fails with
	// ErrAcceptByServer, because the server accepts on it). Cancelling the context
	// cancels the requests' contexts; it does not close connections (Shutdown and Close
	// do). It must not return nil (Serve panics, as http.Server's does). Nil means
	// context.Background().
	BaseContext func(net.Listener) context.Context
	// ConnContext, when set, returns the context of a new connection's requests, from
	// the listener's (BaseContext's, or context.Background()) and the connection, as
	// http.Server.ConnContext. It runs on the runtime's worker, before StateNew: it must
	// be quick and not block. It must not return nil: the connection is then closed and
	// Serve returns the panic, as a *blitzio.PanicError (http.Server panics).
	ConnContext func(ctx context.Context, c net.Conn) context.Context

	mu         sync.Mutex
	conns      map[*conn]struct{}
	listeners  map[*listener]struct{}
	connsGone  chan struct{} // closed when shutting down and no connection is left
	hooked     bool          // registered with Coordinator
	inShutdown atomic.Bool
	pool       handlerPool
	onShutdown []func()
}

// ErrNoRuntime is returned by Serve and ServeUnix when given a nil runtime or listener
// (a listener given with a nil runtime is closed, as the server owns it), and by
// ListenAndServe, before it listens, when given a nil runtime.
var ErrNoRuntime = errors.New("httpserve: Serve needs a runtime and a listener")

// ErrAcceptByServer is what Accept returns on the net.Listener that BaseContext gets: the
// server accepts that listener's connections itself.
var ErrAcceptByServer = errors.New("httpserve: the server accepts on this listener")

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
	ctx    context.Context // BaseContext's, or nil
}

// netListener is the net.Listener BaseContext gets: the listener being served.
type netListener struct{ l *listener }

func (v netListener) Accept() (net.Conn, error) { return nil, ErrAcceptByServer }
func (v netListener) Close() error              { return v.l.close() }
func (v netListener) Addr() net.Addr            { return v.l.addr }

type acceptedConn struct {
	s connStream
}

// Serve accepts connections on l and serves each with one blitzio task on rt (see the
// package documentation), until Shutdown or Close, after which it returns
// http.ErrServerClosed; it returns the accept error that stopped it otherwise. Serve
// blocks the calling goroutine: call it from a plain goroutine (main or one of yours),
// never from a task. The server owns l: Shutdown and Close close it, and so does Serve
// when it returns an error of its own, as http.Server.Serve does.
func (srv *Server) Serve(rt *blitzio.Runtime, l *blitzio.TCPListener) error {
	if rt == nil || l == nil {
		if l != nil {
			l.Close() // the server owns l, even when it cannot serve it
		}
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
		if l != nil {
			l.Close() // the server owns l, even when it cannot serve it
		}
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
	if rt == nil {
		return ErrNoRuntime // before listening: no socket to leak
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
	if srv.BaseContext != nil {
		ctx := srv.BaseContext(netListener{l})
		if ctx == nil {
			l.close()
			panic("httpserve: BaseContext returned a nil context")
		}
		l.ctx = ctx
	}
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
	if jerr != nil || err != nil && !errors.Is(err, net.ErrClosed) {
		// The accept task failed (a hook's panic or Goexit, an accept error). Not
		// after net.ErrClosed: the listener was closed by its owner (BaseContext's
		// net.Listener), and closing it again would only report net.ErrClosed.
		l.close()
	}
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
			if a.srv.inShutdown.Load() {
				return nil, true // Serve returns http.ErrServerClosed
			}
			// A listener closed by someone else (BaseContext's net.Listener, the
			// caller's own reference) included: Serve reports it, as
			// http.Server.Serve does, instead of returning nil as if it had been asked
			// to stop.
			return r.Err, true
		}
		c := newConn(a.srv, a.rt, r.Value)
		if a.srv.hasConnHooks() {
			a.addHooks(c)
		}
		if !a.srv.track(c) {
			c.closeStream()
			return nil, true
		}
		blitzio.Spawn(cx, c).Detach() // its first poll reports http.StateNew
	}
}

// hasConnHooks reports whether connections need what ConnState, BaseContext or ConnContext
// see: a net.Conn and a context.
func (srv *Server) hasConnHooks() bool {
	return srv.ConnState != nil || srv.ConnContext != nil || srv.BaseContext != nil
}

// addHooks gives c its net.Conn and context. If ConnContext panics (or returns nil),
// the connection and the listener are closed before the panic ends the accept task,
// so that Serve returns it instead of leaving them open.
func (a *acceptLoop) addHooks(c *conn) {
	x := &connExt{nc: stream.NewConn(c.s), ctx: a.l.ctx}
	c.ext = x
	if cc := a.srv.ConnContext; cc != nil {
		ok := false
		defer func() {
			if !ok {
				c.closeStream()
				a.l.close()
			}
		}()
		base := x.ctx
		if base == nil {
			base = context.Background()
		}
		ctx := cc(base, x.nc)
		if ctx == nil {
			panic("httpserve: ConnContext returned a nil context")
		}
		x.ctx = ctx
		ok = true
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
// as WebSockets, to close. The functions run once, when the first Shutdown or Close
// (or the Coordinator's trigger) begins, whatever calls follow; http.Server runs them
// on every Shutdown call and not on Close. A function registered after that never runs.
func (srv *Server) RegisterOnShutdown(f func()) {
	srv.mu.Lock()
	srv.onShutdown = append(srv.onShutdown, f)
	srv.mu.Unlock()
}

// isTimeout reports a deadline error, for tests and logging.
func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
