package netload

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/cloudwego/netpoll"
	"github.com/valyala/fasthttp"
)

// PlaintextBody is the body every HTTP server under test answers GET /plaintext with,
// as in the TechEmpower plaintext test.
const PlaintextBody = "Hello, World!"

// PlaintextPath is the path of the plaintext route.
const PlaintextPath = "/plaintext"

// StartFunc starts a server listening on addr (a loopback "host:port"; port 0 picks a
// free one). It returns the address it bound and a function that stops the server:
// closes the listener and every connection, and returns once the server's goroutines
// (or tasks) are gone. stop is safe to call more than once.
type StartFunc func(addr string) (bound string, stop func() error, err error)

// Server is one server implementation under load.
//
// What a server must do depends on the client that measures it:
//   - echo servers ([EchoClient], [Connect], [IdleConnMemory] with [HoldEcho]) write
//     back every byte they read on a TCP connection, and keep the connection open until
//     the peer closes it;
//   - UDP echo servers ([UDPClient]) send every datagram back to its sender;
//   - HTTP servers ([HTTPClient], [IdleConnMemory] with [HoldHTTP]) answer
//     GET /plaintext with status 200 and the 13-byte body [PlaintextBody], any other
//     path with a status other than 200, keep connections alive and answer pipelined
//     requests in order.
type Server struct {
	Name  string
	Start StartFunc
}

// stopOnce makes a stop function idempotent: the second call returns the first
// call's error without stopping anything again.
func stopOnce(f func() error) func() error {
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() { err = f() })
		return err
	}
}

// NetEcho is a goroutine-per-connection echo server on the standard library's net
// package: one goroutine per connection reading into a 4 KiB buffer and writing back
// what it read. It keeps its connections in a map (one entry each, counted in its
// idle-connection memory) so that stop can close them.
func NetEcho() Server {
	return Server{Name: "net", Start: startNetEcho}
}

func startNetEcho(addr string) (string, func() error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	return serveNetEcho(ln, nil)
}

// ServeEcho serves echo on ln the way NetEcho does (one goroutine per connection, a
// 4 KiB buffer each) until the returned stop function closes ln and every connection
// and waits for their goroutines. It is how a goroutine-per-connection echo server
// over any net.Listener (the standard one, or an adapter's) becomes a [StartFunc]'s
// result, so the two can be compared with nothing else different.
func ServeEcho(ln net.Listener) (bound string, stop func() error, err error) {
	return serveNetEcho(ln, nil)
}

// serveNetEcho serves echo on ln, one goroutine per connection; onConn, if not nil, is
// called with +1 when a connection's goroutine starts and -1 when it ends.
func serveNetEcho(ln net.Listener, onConn func(delta int64)) (string, func() error, error) {
	t := newConnTracker()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					t.fail(fmt.Errorf("netload: net echo: accept: %w", err))
				}
				return
			}
			if !t.add(c) {
				c.Close()
				return
			}
			go func() {
				defer t.done(c) // last: stop's wait ends only after onConn(-1)
				if onConn != nil {
					onConn(1)
					defer onConn(-1)
				}
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return // EOF, a reset, or closed by stop: the end of this connection
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), stopOnce(func() error {
		err := ln.Close()
		return errors.Join(err, t.closeAll())
	}), nil
}

// connTracker lets a goroutine-per-connection server close every connection on stop and
// wait for its goroutines. The closed flag, read under mu, prevents the race where a
// connection accepted while stop runs is added after closeAll's sweep and then never
// closed (its goroutine would outlive stop).
type connTracker struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	err    error
	wg     sync.WaitGroup
}

func newConnTracker() *connTracker { return &connTracker{conns: map[net.Conn]struct{}{}} }

func (t *connTracker) add(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.conns[c] = struct{}{}
	t.wg.Add(1)
	return true
}

func (t *connTracker) done(c net.Conn) {
	c.Close()
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
	t.wg.Done()
}

func (t *connTracker) fail(err error) {
	t.mu.Lock()
	t.err = errors.Join(t.err, err)
	t.mu.Unlock()
}

func (t *connTracker) closeAll() error {
	t.mu.Lock()
	t.closed = true
	for c := range t.conns {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// NetpollEcho is an echo server on github.com/cloudwego/netpoll: an event loop reads
// each connection's input into netpoll's buffers and runs the handler on its goroutine
// pool only when data has arrived, so an idle connection holds no goroutine.
func NetpollEcho() Server {
	return Server{Name: "netpoll", Start: startNetpollEcho}
}

func startNetpollEcho(addr string) (string, func() error, error) {
	ln, err := netpoll.CreateListener("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	loop, err := netpoll.NewEventLoop(func(_ context.Context, c netpoll.Connection) error {
		r, w := c.Reader(), c.Writer()
		n := r.Len()
		if n == 0 {
			return nil
		}
		in, err := r.Next(n)
		if err != nil {
			return c.Close()
		}
		// Copy into writer-owned memory before releasing the input: WriteBinary would
		// link the input buffer itself into the output, and Release may recycle it while
		// an unflushed remainder still points into it.
		out, err := w.Malloc(n)
		if err != nil {
			return c.Close()
		}
		copy(out, in)
		if err := r.Release(); err != nil {
			return c.Close()
		}
		if err := w.Flush(); err != nil {
			return c.Close()
		}
		return nil
	})
	if err != nil {
		ln.Close()
		return "", nil, err
	}
	served := make(chan error, 1)
	go func() { served <- loop.Serve(ln) }()
	return ln.Addr().String(), stopOnce(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Shutdown does nothing when Serve has not yet installed its server (a stop
		// right after Start), and Serve would then run forever: call it again until
		// Serve returns.
		var err error
		for {
			err = loop.Shutdown(ctx)
			select {
			case serr := <-served:
				ln.Close() // already closed by Shutdown; closes it if Serve failed early
				return errors.Join(err, serr)
			case <-ctx.Done():
				ln.Close()
				return errors.Join(err, errors.New("netload: netpoll: Serve did not return after Shutdown"))
			case <-time.After(20 * time.Millisecond):
			}
		}
	}), nil
}

// NetUDPEcho is a UDP echo server on the standard library: GOMAXPROCS goroutines read
// datagrams from one socket and send each back to its sender.
func NetUDPEcho() Server {
	return Server{Name: "net", Start: startNetUDPEcho}
}

func startNetUDPEcho(addr string) (string, func() error, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return "", nil, err
	}
	c, err := net.ListenUDP("udp", ua)
	if err != nil {
		return "", nil, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var serveErr error
	readers := runtime.GOMAXPROCS(0)
	wg.Add(readers)
	for range readers {
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, from, err := c.ReadFromUDPAddrPort(buf)
				if err != nil {
					if !errors.Is(err, net.ErrClosed) {
						mu.Lock()
						serveErr = errors.Join(serveErr, err)
						mu.Unlock()
					}
					return
				}
				// A failed send is a lost datagram, which UDP allows; the client counts it.
				_, _ = c.WriteToUDPAddrPort(buf[:n], from)
			}
		}()
	}
	return c.LocalAddr().String(), stopOnce(func() error {
		err := c.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return errors.Join(err, serveErr)
	}), nil
}

// PlaintextHandler is the net/http handler of NetHTTP: GET /plaintext answered with
// PlaintextBody (Content-Type text/plain, Content-Length 13); other paths and methods
// get 404. It routes as the fasthttp server's handler does, with one comparison of the
// path and the method, so that every server runs the same application logic; an
// http.ServeMux would add its own cost (a pattern lookup under a read lock, whose
// counter every request on every core writes) to the http.Handler servers only.
func PlaintextHandler() http.Handler {
	body := []byte(PlaintextBody)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != PlaintextPath || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h["Content-Type"] = []string{"text/plain"}
		h["Content-Length"] = []string{"13"}
		w.Write(body)
	})
}

// NetHTTP is net/http's server with the plaintext route (PlaintextHandler, 404 elsewhere).
// PlaintextHandler is that handler, for serving it over another listener with
// ServeHTTP.
func NetHTTP() Server {
	return Server{Name: "net/http", Start: func(addr string) (string, func() error, error) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return "", nil, err
		}
		return ServeHTTP(ln, PlaintextHandler())
	}}
}

// ServeHTTP serves h with net/http's server on ln until the returned stop function
// closes the server and its connections. It is how an http.Handler server over any
// net.Listener (the standard one, or an adapter's) becomes a [StartFunc]'s result.
func ServeHTTP(ln net.Listener, h http.Handler) (bound string, stop func() error, err error) {
	srv := &http.Server{Handler: h}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	return ln.Addr().String(), stopOnce(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Close closes the listeners and every connection; closing ln as well covers a
		// stop that comes before Serve started tracking it.
		err := srv.Close()
		ln.Close()
		return errors.Join(err, waitServed(ctx, served, "net/http"))
	}), nil
}

// FastHTTP is github.com/valyala/fasthttp's server with the plaintext route (404
// elsewhere), default options.
func FastHTTP() Server {
	return Server{Name: "fasthttp", Start: startFastHTTP}
}

func startFastHTTP(addr string) (string, func() error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	body := []byte(PlaintextBody)
	srv := &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			if string(ctx.Path()) == PlaintextPath && ctx.IsGet() {
				ctx.SetContentType("text/plain")
				ctx.SetBody(body)
				return
			}
			ctx.SetStatusCode(fasthttp.StatusNotFound)
		},
		Logger: discardLogger{},
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	return ln.Addr().String(), stopOnce(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// ShutdownWithContext closes the listeners Serve registered and the idle
		// keep-alive connections, then waits for the busy ones; the timeout bounds a
		// client that never stops. A stop right after Start can come before Serve
		// registered ln, so close ln too: Serve's Accept then fails and it returns.
		err := srv.ShutdownWithContext(ctx)
		ln.Close()
		return errors.Join(err, waitServed(ctx, served, "fasthttp"))
	}), nil
}

// waitServed waits for a Serve call to return after its server was stopped, and
// returns its error unless it is the one a stop causes.
func waitServed(ctx context.Context, served <-chan error, name string) error {
	select {
	case err := <-served:
		if err == nil || errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
		return fmt.Errorf("netload: %s: Serve did not return after stop", name)
	}
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}
