//go:build linux || darwin || freebsd

package benchmarks

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/blitzgo/blitz/benchmarks/netload"
	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/stream"
)

// blitzio's rows in the net and http suites: a TCP echo server written as tasks (one
// small state machine per connection, holding no buffer while idle), on io_uring and on
// epoll; a UDP echo task; and, for the goroutine adapters, net/http and a
// goroutine-per-connection echo served over stream.NewTCPListener.
func init() {
	netServers = append(netServers,
		netload.Server{Name: "blitzio/io_uring", Start: startBlitzioEcho(blitzio.BackendIOUring)},
		netload.Server{Name: "blitzio/epoll", Start: startBlitzioEcho(blitzio.BackendEpoll)},
		// The io_uring driver with one multishot readiness poll per socket (its design
		// before the one-shot polls armed on demand), measured in the same run.
		netload.Server{Name: "blitzio/io_uring-multishot", Start: withEnv("BLITZIO_IOURING_MULTISHOT", "1", startBlitzioEcho(blitzio.BackendIOUring))},
	)
	udpServers = append(udpServers,
		netload.Server{Name: "blitzio/io_uring", Start: startBlitzioUDPEcho(blitzio.BackendIOUring)},
		netload.Server{Name: "blitzio/epoll", Start: startBlitzioUDPEcho(blitzio.BackendEpoll)},
	)
	adapterEchoServers = append(adapterEchoServers, netload.Server{Name: "blitzio-adapter", Start: startAdapterEcho})
	// A variant of blitzio's own HTTP server (httpserve, first in the list: see
	// suite_http_blitzio.go): net/http serving over blitzio's net.Listener adapter.
	httpServers = append(httpServers, netload.Server{Name: "net/http-over-blitzio-adapter", Start: startAdapterHTTP})
}

// withEnv runs start with the environment variable k set to v (blitzio reads its
// BLITZIO_* settings when a runtime is created), and restores it after.
func withEnv(k, v string, start netload.StartFunc) netload.StartFunc {
	return func(addr string) (string, func() error, error) {
		old, had := os.LookupEnv(k)
		os.Setenv(k, v)
		defer func() {
			if had {
				os.Setenv(k, old)
			} else {
				os.Unsetenv(k)
			}
		}()
		return start(addr)
	}
}

// benchRuntime starts the 2-worker runtime a benchmark server runs on.
func benchRuntime(b blitzio.Backend) (*blitzio.Runtime, error) {
	rt, err := blitzio.New(blitzio.Config{Workers: 2, Backend: b})
	if err != nil {
		return nil, fmt.Errorf("blitzio runtime (%v): %w", b, err)
	}
	return rt, nil
}

func listenTCP(addr string) (*blitzio.TCPListener, error) {
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, err
	}
	return blitzio.ListenTCP("tcp", ta)
}

// echoBufs are the read buffers of the echo connections: a connection takes one only
// while it has bytes to echo, so an idle connection holds none.
var echoBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// echoConn is one connection's task: read what arrives, write it back, repeat. It is
// 24 bytes (offsets as int32, the buffers are 16 KiB): one per connection.
type echoConn struct {
	s        *blitzio.TCPStream
	buf      *[]byte
	off, end int32
}

func (c *echoConn) Poll(cx *blitzio.Context) (struct{}, bool) {
	for {
		if c.buf != nil {
			for c.off < c.end {
				r, ok := c.s.PollWrite(cx, (*c.buf)[c.off:c.end])
				if !ok {
					return struct{}{}, false // keep the buffer: its bytes are not sent yet
				}
				if r.Err != nil {
					return c.finish()
				}
				c.off += int32(r.Value)
			}
			echoBufs.Put(c.buf)
			c.buf = nil
		}
		buf := echoBufs.Get().(*[]byte)
		r, ok := c.s.PollRead(cx, *buf)
		if !ok {
			echoBufs.Put(buf) // a readiness-based read keeps nothing while it waits
			return struct{}{}, false
		}
		if r.Err != nil {
			echoBufs.Put(buf)
			return c.finish()
		}
		c.buf, c.off, c.end = buf, 0, int32(r.Value)
	}
}

func (c *echoConn) finish() (struct{}, bool) {
	if c.buf != nil {
		echoBufs.Put(c.buf)
		c.buf = nil
	}
	c.s.Close()
	return struct{}{}, true
}

// Drop implements blitzio.Dropper: a connection task dropped at shutdown closes its
// socket.
func (c *echoConn) Drop() { c.finish() }

// acceptLoop accepts until the listener closes, spawning an echoConn per connection.
// Its result is the error that stopped it (nil for a closed listener).
type acceptLoop struct{ l *blitzio.TCPListener }

func (a acceptLoop) Poll(cx *blitzio.Context) (error, bool) {

	for {
		r, ok := a.l.PollAccept(cx)
		if !ok {
			return nil, false
		}
		if r.Err != nil {
			if errors.Is(r.Err, net.ErrClosed) {
				return nil, true
			}
			return r.Err, true
		}
		blitzio.Spawn(cx, &echoConn{s: r.Value.Conn})
	}
}

func startBlitzioEcho(b blitzio.Backend) netload.StartFunc {
	return func(addr string) (string, func() error, error) {
		rt, err := benchRuntime(b)
		if err != nil {
			return "", nil, err
		}
		l, err := listenTCP(addr)
		if err != nil {
			rt.Close()
			return "", nil, err
		}
		h := blitzio.Spawn(rt, acceptLoop{l: l})
		stop := func() error {
			l.Close()
			r, err := h.Wait()
			return errors.Join(r, err, rt.Close())
		}
		return l.Addr().String(), stop, nil
	}
}

// udpEcho is the UDP echo task: receive a datagram, send it back to its sender, with
// the poll forms that take the address as a netip.AddrPort (nothing allocated per
// datagram). Its result is the error that stopped it (nil for a closed socket).
type udpEcho struct {
	c       *blitzio.UDPConn
	buf     []byte
	pending blitzio.AddrPortDatagram
	sending bool
}

func (u *udpEcho) Poll(cx *blitzio.Context) (error, bool) {
	for {
		if !u.sending {
			r, ok := u.c.PollRecvFromAddrPort(cx, u.buf)
			if !ok {
				return nil, false
			}
			if r.Err != nil {
				if errors.Is(r.Err, net.ErrClosed) {
					return nil, true
				}
				return r.Err, true
			}
			u.pending, u.sending = r.Value, true
		}
		r, ok := u.c.PollSendToAddrPort(cx, u.buf[:u.pending.N], u.pending.From)
		if !ok {
			return nil, false
		}
		u.sending = false
		if r.Err != nil && errors.Is(r.Err, net.ErrClosed) {
			return nil, true
		}
		// Any other failed send is a lost datagram, which UDP allows; the client counts it.
	}
}

func startBlitzioUDPEcho(b blitzio.Backend) netload.StartFunc {
	return func(addr string) (string, func() error, error) {
		rt, err := benchRuntime(b)
		if err != nil {
			return "", nil, err
		}
		ua, err := net.ResolveUDPAddr("udp", addr)
		if err != nil {
			rt.Close()
			return "", nil, err
		}
		c, err := blitzio.ListenUDP("udp", ua)
		if err != nil {
			rt.Close()
			return "", nil, err
		}
		// One echo task per worker on the one socket, as the net server runs one
		// goroutine per P.
		hs := make([]blitzio.JoinHandle[error], rt.Workers())
		for i := range hs {
			hs[i] = blitzio.Spawn(rt, &udpEcho{c: c, buf: make([]byte, 64<<10)})
		}
		stop := func() error {
			c.Close()
			var errs []error
			for _, h := range hs {
				r, err := h.Wait()
				errs = append(errs, r, err)
			}
			return errors.Join(append(errs, rt.Close())...)
		}
		return c.LocalAddr().String(), stop, nil
	}
}

// startOnAdapter starts a runtime and a TCP listener on addr, and hands the listener,
// as a net.Listener through blitzio's adapter, to serve, which returns the function that
// stops what it started. The returned stop also closes the listener and the runtime.
func startOnAdapter(addr string, serve func(ln net.Listener) (stop func() error)) (string, func() error, error) {
	rt, err := benchRuntime(blitzio.BackendAuto)
	if err != nil {
		return "", nil, err
	}
	l, err := listenTCP(addr)
	if err != nil {
		rt.Close()
		return "", nil, err
	}
	ln := stream.NewTCPListener(rt, l)
	stopServe := serve(ln)
	stop := func() error {
		// The server first, then the listener (a second Close is harmless): closed the
		// other way round, http.Server.Serve could see its listener fail before its own
		// Close and return that accept error instead of http.ErrServerClosed, which
		// failed the measurement after it was taken.
		err := stopServe()
		ln.Close()
		return errors.Join(err, rt.Close())
	}
	return ln.Addr().String(), stop, nil
}

// startAdapterEcho serves the goroutine-per-connection echo of the baseline it is
// compared with (netload.ServeEcho: a goroutine and a 4 KiB buffer per connection, the
// code of netload.NetEcho) over blitzio's net.Listener adapter, so the adapter is the
// only difference between the two rows. (It used to run its own io.Copy loop, with a
// 32 KiB buffer per connection and a different read/write path from the baseline's.)
func startAdapterEcho(addr string) (string, func() error, error) {
	return startOnAdapter(addr, func(ln net.Listener) func() error {
		_, stop, err := netload.ServeEcho(ln)
		if err != nil {
			return func() error { return err }
		}
		return stop
	})
}

// startAdapterHTTP serves PlaintextHandler with net/http over blitzio's net.Listener
// adapter.
func startAdapterHTTP(addr string) (string, func() error, error) {
	return startOnAdapter(addr, func(ln net.Listener) func() error {
		srv := &http.Server{Handler: netload.PlaintextHandler()}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		return func() error {
			err := srv.Close()
			if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
				err = errors.Join(err, serr)
			}
			return err
		}
	})
}
