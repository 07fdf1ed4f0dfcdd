//go:build linux || darwin || freebsd

package blitzio

import (
	"context"
	"errors"
	"log"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ---- listener ----

// ListenConfig holds the options of a listening socket. The zero value is what
// ListenTCP uses: the system's maximum backlog, SO_REUSEADDR on (as Go's net sets it),
// SO_REUSEPORT off.
type ListenConfig struct {
	// Backlog is the accept queue length passed to listen(2); 0 means the system
	// maximum (SOMAXCONN).
	Backlog int
	// NoReuseAddr turns off SO_REUSEADDR, which is set by default so that a server can
	// restart while connections of its previous run are in TIME_WAIT.
	NoReuseAddr bool
	// ReusePort sets SO_REUSEPORT: several sockets (in one or several processes) may
	// listen on the same address, and the kernel spreads connections among them.
	ReusePort bool
	// Control, if not nil, is called after the socket is created and its options
	// above are set, before it is bound, as net.ListenConfig's: network is "tcp4" or
	// "tcp6" (the socket's family), address the local address asked for, and c's
	// Control reaches the descriptor (its Read and Write fail: the socket is not yet
	// listening). An error fails the listen, closing the socket.
	Control func(network, address string, c syscall.RawConn) error
	// KeepAlive is the idle time before keep-alive probes start on the accepted
	// connections: 0 means 15 s (as net's), and a negative value turns probes off,
	// unless KeepAliveConfig.Enable.
	KeepAlive time.Duration
	// KeepAliveConfig, when its Enable is set, is the accepted connections'
	// keep-alive configuration (zero fields take net's defaults), and KeepAlive is
	// ignored.
	KeepAliveConfig net.KeepAliveConfig
}

// keepAliveConfig is the configuration of net.Dialer's and net.ListenConfig's
// KeepAlive and KeepAliveConfig fields.
func keepAliveConfig(idle time.Duration, cfg net.KeepAliveConfig) net.KeepAliveConfig {
	switch {
	case cfg.Enable:
		return cfg
	case idle >= 0:
		return net.KeepAliveConfig{Enable: true, Idle: idle}
	}
	return net.KeepAliveConfig{}
}

// TCPListener is a listening TCP socket served by a Runtime's I/O driver. Its methods
// are safe for concurrent use; several tasks may Accept at once.
type TCPListener struct {
	fd *netFD
	// closing is set by Close before it stops the socket listening: an accept that
	// shutdown(2) wakes with EINVAL then reports net.ErrClosed, as after the close.
	closing atomic.Bool
	// keepAlive is the accepted connections' keep-alive configuration.
	keepAlive net.KeepAliveConfig
}

// Listen opens a TCP listener on address ("host:port"), like net.Listen for the TCP
// networks ("tcp", "tcp4", "tcp6"): an empty host (":8080") listens on every address
// of the system (both families on "tcp"), and a host name is resolved first, on the
// calling goroutine (as net.Listen does), to its first address.
func Listen(network, address string) (*TCPListener, error) {
	return ListenConfig{}.Listen(network, address)
}

// Listen is the package Listen with the options of lc.
func (lc ListenConfig) Listen(network, address string) (*TCPListener, error) {
	if !isTCPNetwork(network) {
		return nil, &net.OpError{Op: "listen", Net: network, Err: net.UnknownNetworkError(network)}
	}
	laddr, err := net.ResolveTCPAddr(network, address)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	return lc.ListenTCP(network, laddr)
}

// ListenTCP opens a TCP listener on laddr, like net.ListenTCP: network is "tcp", "tcp4"
// or "tcp6"; a nil laddr or port 0 picks an ephemeral port (see Addr). The listener is
// attached to the runtime of the first task (or BlockOn) that accepts on it.
func ListenTCP(network string, laddr *net.TCPAddr) (*TCPListener, error) {
	return ListenConfig{}.ListenTCP(network, laddr)
}

// ListenTCP opens a TCP listener with the options of lc; see the package ListenTCP.
func (lc ListenConfig) ListenTCP(network string, laddr *net.TCPAddr) (*TCPListener, error) {
	if laddr == nil {
		laddr = &net.TCPAddr{}
	}
	opErr := func(err error) error {
		return &net.OpError{Op: "listen", Net: network, Addr: laddr, Err: err}
	}
	if !isTCPNetwork(network) {
		return nil, opErr(net.UnknownNetworkError(network))
	}
	if lc.Backlog < 0 {
		return nil, opErr(errors.New("negative ListenConfig.Backlog"))
	}
	family, dual, err := inetFamily(network, laddr.IP)
	if err != nil {
		return nil, opErr(err)
	}
	sa, err := ipZoneToSockaddr(family, laddr.IP, laddr.Port, laddr.Zone)
	if err != nil {
		return nil, opErr(err)
	}
	s, err := newSocket(family, unix.SOCK_STREAM, unix.IPPROTO_TCP)
	if err != nil {
		return nil, opErr(err)
	}
	fail := func(sys string, err error) (*TCPListener, error) {
		unix.Close(s)
		return nil, opErr(os.NewSyscallError(sys, err))
	}
	if family == unix.AF_INET6 {
		v6only := 1
		if dual {
			v6only = 0
		}
		if err := unix.SetsockoptInt(s, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, v6only); err != nil {
			return fail("setsockopt", err)
		}
	}
	if !lc.NoReuseAddr {
		if err := unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return fail("setsockopt", err)
		}
	}
	if lc.ReusePort {
		if err := unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return fail("setsockopt", err)
		}
	}
	if lc.Control != nil {
		ctrlNet := "tcp4"
		if family == unix.AF_INET6 {
			ctrlNet = "tcp6"
		}
		if err := runControl(lc.Control, ctrlNet, laddr.String(), s); err != nil {
			return nil, opErr(err)
		}
	}
	if err := unix.Bind(s, sa); err != nil {
		return fail("bind", err)
	}
	backlog := lc.Backlog
	if backlog == 0 || backlog > unix.SOMAXCONN*1024 {
		backlog = listenBacklog()
	}
	if err := unix.Listen(s, backlog); err != nil {
		return fail("listen", err)
	}
	fd := newNetFD(s, family, unix.SOCK_STREAM, network)
	if lsa, err := unix.Getsockname(s); err == nil {
		fd.laddr = sockaddrToTCP(lsa)
	}
	return &TCPListener{fd: fd, keepAlive: keepAliveConfig(lc.KeepAlive, lc.KeepAliveConfig)}, nil
}

// runControl calls a ListenConfig's or Dialer's Control function on the new socket s,
// and closes s when it fails. It closes s too when the function does not return: a
// panic (which the runtime recovers in a dialing task, and carries on) or a
// runtime.Goexit would otherwise leak the socket, which nobody else holds yet.
func runControl(control func(network, address string, c syscall.RawConn) error, network, address string, s int) (err error) {
	returned := false
	defer func() {
		if !returned || err != nil {
			unix.Close(s)
		}
	}()
	err = control(network, address, setupRawConn(s))
	returned = true
	return err
}

func isTCPNetwork(network string) bool {
	return network == "tcp" || network == "tcp4" || network == "tcp6"
}

// listenBacklog is net.core.somaxconn, as Go's net reads it.
func listenBacklog() int {
	b, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err != nil {
		return unix.SOMAXCONN
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	if n == 0 {
		return unix.SOMAXCONN
	}
	return min(n, 1<<16-1)
}

// Addr returns the listener's local address (with the port the system chose).
func (l *TCPListener) Addr() net.Addr { return l.fd.laddr }

// TCPAddr is Addr as a *net.TCPAddr.
func (l *TCPListener) TCPAddr() *net.TCPAddr { a, _ := l.fd.laddr.(*net.TCPAddr); return a }

// Close stops listening. Accepts waiting in other tasks fail with an error wrapping
// net.ErrClosed; connections queued by the kernel and not accepted are reset.
func (l *TCPListener) Close() error {
	// The first Close claims the closing before it stops the socket listening: that
	// wakes the waiting accepts, and an acceptor that closes the listener on the error
	// (as an accept loop does) must get net.ErrClosed, not win the descriptor from
	// under this call and make the owner's own Close fail.
	if !l.closing.CompareAndSwap(false, true) {
		return l.fd.opError("close", "close", net.ErrClosed)
	}
	l.fd.stopListening()
	if err := l.fd.Close(); err != nil {
		return l.fd.opError("close", "close", err)
	}
	return nil
}

// Accepted is what an accept returns: the connection and its peer's address.
type Accepted struct {
	Conn *TCPStream
	Peer *net.TCPAddr
}

// acceptBackoff bounds the pause after EMFILE/ENFILE/ENOBUFS/ENOMEM: the listener stops
// accepting for a while (the connection stays queued in the kernel) and tries again, so
// that a process out of descriptors keeps serving once some are freed, instead of
// spinning on the error or failing the server.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// acceptBackoffs counts the accept back-offs of the process (read by tests).
var acceptBackoffs atomic.Int64

// PollAccept is the poll form of Accept for hand-written futures: it accepts a pending
// connection, or leaves cx's waker registered and reports false.
func (l *TCPListener) PollAccept(cx *Context) (Result[Accepted], bool) {
	var w Waker
	return l.pollAccept(cx, &w)
}

func (l *TCPListener) pollAccept(cx *Context, w *Waker) (Result[Accepted], bool) {
	var sa unix.Sockaddr
	nfd, err, ok := l.fd.pollIO(cx, dirRead, w, func(fd int) (int, error) {
		n, s, err := sysAccept(fd)
		if err == unix.ECONNABORTED {
			return -1, unix.EINTR // the peer gave up before we took it: try the next one
		}
		if err == unix.EINVAL && l.closing.Load() {
			return -1, net.ErrClosed // woken by Close's shutdown(2)
		}
		sa = s
		return n, err
	})
	if !ok {
		return Result[Accepted]{}, false
	}
	if err != nil {
		return Result[Accepted]{Err: l.fd.opError("accept", "accept4", err)}, true
	}
	c := newNetFD(nfd, int(l.fd.family), unix.SOCK_STREAM, l.fd.net)
	c.raddr = sockaddrToTCP(sa)
	// The local address is looked up when first asked for (netFD.localAddr): an idle
	// connection does not hold it, and accepting costs one system call fewer.
	c.lazyLocal = true
	unix.SetsockoptInt(nfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	setKeepAliveConfig(nfd, l.keepAlive) // as net.TCPListener.Accept: on by default
	if _, err := c.bindTo(cx.rt); err != nil {
		unix.Close(nfd)
		return Result[Accepted]{Err: l.fd.opError("accept", "accept4", err)}, true
	}
	return Result[Accepted]{Value: Accepted{Conn: &TCPStream{fd: c}, Peer: c.raddr.(*net.TCPAddr)}}, true
}

// isResourceExhausted reports the accept errors that mean "out of descriptors or
// memory": retry later rather than fail.
func isResourceExhausted(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

// Accept returns a future of the next connection. Dropping it while it waits loses no
// connection: accept(2) runs only inside a poll that returns the connection. When the
// process is out of file descriptors (EMFILE, ENFILE) or memory, the future waits and
// retries (5 ms, doubling up to 1 s) instead of failing: the connection stays queued in
// the kernel and is served once descriptors are free.
func (l *TCPListener) Accept() Future[Result[Accepted]] { return &acceptFuture{l: l} }

type acceptFuture struct {
	l       *TCPListener
	w       Waker
	backoff time.Duration
	sleep   *SleepFuture
}

func (f *acceptFuture) Poll(cx *Context) (Result[Accepted], bool) {
	for {
		if f.sleep != nil {
			if _, ok := f.sleep.Poll(cx); !ok {
				return Result[Accepted]{}, false
			}
			f.sleep = nil
		}
		r, ok := f.l.pollAccept(cx, &f.w)
		if !ok {
			return r, false
		}
		if r.Err != nil && isResourceExhausted(r.Err) && cx.rt != nil {
			acceptBackoffs.Add(1)
			f.backoff = min(max(2*f.backoff, acceptBackoffMin), acceptBackoffMax)
			f.sleep = Sleep(f.backoff)
			continue
		}
		f.w = Waker{}
		return r, true
	}
}

func (f *acceptFuture) Drop() {
	f.l.fd.forget(dirRead, &f.w)
	if f.sleep != nil {
		f.sleep.Drop()
		f.sleep = nil
	}
}

// ---- stream ----

// TCPStream is a TCP connection served by a Runtime's I/O driver. One task may read
// while another writes (see Split); several tasks reading at once each get whatever
// bytes their own read returns. Every operation is a future: dropping one that has not
// finished leaves the stream as if it had never been started (a read consumes no bytes;
// a write's bytes are either reported in its result or, for WriteAll, counted by
// Written). TCP_NODELAY and keep-alive (15 s idle, 15 s interval, 9 probes) are on by
// default, as in Go's net.
type TCPStream struct {
	fd *netFD
}

// DialTCP connects to raddr, like net.DialTCP. laddr may be nil. The future owns the
// socket until it finishes: dropped before, it closes it. Bound its time with Timeout:
// the error is then a net.Error whose Timeout() is true.
func DialTCP(network string, laddr, raddr *net.TCPAddr) Future[Result[*TCPStream]] {
	return &dialFuture{network: network, laddr: laddr, raddr: raddr, addrs: []*net.TCPAddr{raddr}, keepAlive: defaultKeepAlive}
}

// Dial connects to address ("host:port") on network "tcp", "tcp4" or "tcp6". A host
// name is resolved with net.DefaultResolver on the runtime's blocking pool, and the
// addresses are tried as net.Dial tries them: in order until one connects, and on
// "tcp", for a name with addresses of both families, with Happy Eyeballs (RFC 6555):
// the other family's addresses start 300 ms after the first family's (or as soon as
// those have all failed), and the first connection made wins. When every address
// fails, the error is the first address's.
func Dial(network, address string) Future[Result[*TCPStream]] {
	return DialContext(context.Background(), network, address)
}

// DialContext is Dial with a context: when ctx ends first, the dial fails with an error
// wrapping ctx.Err() (a net.Error with Timeout() true for a deadline). As with
// net.Dialer, a deadline is shared among the addresses left to try (an equal share
// each, at least 2 s), so that one address that never answers does not use it up.
func DialContext(ctx context.Context, network, address string) Future[Result[*TCPStream]] {
	if ctx == nil {
		panic("blitzio: DialContext called with a nil context.Context")
	}
	return &dialFuture{ctx: ctx, network: network, address: address, keepAlive: defaultKeepAlive}
}

// Dialer holds the options of a dial, as net.Dialer does: Dial and DialContext dial
// TCP, DialUDP and DialUnix the other networks (each method's doc says which fields
// apply). The zero value dials as the package's Dial and DialContext do.
type Dialer struct {
	// Timeout bounds the whole dial, the name's resolution included, counted from
	// the call that makes the future (0: no bound; negative: the dial times out at
	// once, as net's). With a context deadline as
	// well, the earlier one ends the dial. Either way the error is a net.Error
	// whose Timeout() is true, and the time is shared among the addresses.
	Timeout time.Duration
	// LocalAddr is the address to dial from (nil: the system picks). When its IP
	// is set, only the name's addresses of that family are tried.
	LocalAddr *net.TCPAddr
	// FallbackDelay is how long a dial on "tcp" waits for the first address
	// family before it starts the other (Happy Eyeballs, RFC 6555): 0 means
	// 300 ms, and a negative value turns the race off (the other family's
	// addresses are tried after the first's, in order).
	FallbackDelay time.Duration
	// KeepAlive is the idle time before keep-alive probes start: 0 means 15 s (as
	// net's; the probes' interval and count are net's defaults too), and a negative
	// value turns probes off, unless KeepAliveConfig.Enable.
	KeepAlive time.Duration
	// KeepAliveConfig, when its Enable is set, is the connection's keep-alive
	// configuration (zero fields take net's defaults), and KeepAlive is ignored.
	KeepAliveConfig net.KeepAliveConfig
	// Control, if not nil, is called for each attempt after the socket is created
	// and before it connects, as net.Dialer's: network is "tcp4" or "tcp6" ("udp4",
	// "udp6" or "unix" for DialUDP and DialUnix), address the address dialed, and
	// c's Control reaches the descriptor (its Read and Write fail: the socket is not
	// yet connected). An error fails the attempt.
	Control func(network, address string, c syscall.RawConn) error
	// Resolver, if not nil, resolves the host names (net.DefaultResolver
	// otherwise), as net.Dialer's.
	Resolver *net.Resolver
}

// Dial is DialContext with context.Background.
func (d *Dialer) Dial(network, address string) Future[Result[*TCPStream]] {
	return d.DialContext(context.Background(), network, address)
}

// DialContext connects to address as the package DialContext does, with d's options.
func (d *Dialer) DialContext(ctx context.Context, network, address string) Future[Result[*TCPStream]] {
	if ctx == nil {
		panic("blitzio: Dialer.DialContext called with a nil context.Context")
	}
	f := &dialFuture{ctx: ctx, network: network, address: address, laddr: d.LocalAddr,
		fallbackDelay: d.FallbackDelay, control: d.Control, resolver: d.Resolver}
	f.keepAlive = keepAliveConfig(d.KeepAlive, d.KeepAliveConfig)
	if d.Timeout != 0 {
		// A negative Timeout is a deadline already past, as net.Dialer's ("including
		// negative, for historical reasons"): the dial fails at once with a timeout,
		// where ignoring it would leave the dial unbounded.
		f.ctx, f.cancelTimeout = context.WithDeadline(ctx, time.Now().Add(d.Timeout))
	}
	return f
}

type dialFuture struct {
	ctx     context.Context
	network string
	address string
	laddr   *net.TCPAddr
	raddr   *net.TCPAddr // DialTCP's address, named by its errors
	addrs   []*net.TCPAddr
	port    int

	lookup   hostLookup
	stopCtx  func() bool
	ctxWaker *sharedWaker
	done     bool
	split    bool // addrs handed to the racers

	// The options of a Dialer (keepAlive also of DialTCP and Dial).
	keepAlive     net.KeepAliveConfig
	fallbackDelay time.Duration
	control       func(network, address string, c syscall.RawConn) error
	resolver      *net.Resolver
	cancelTimeout context.CancelFunc

	primary, fallback dialRacer
	fallbackTimer     *SleepFuture
	// cur is the address last tried, which an end of the context names.
	cur *net.TCPAddr
}

// sharedWaker is the waker a context's AfterFunc calls (from any goroutine): the future
// updates it on each poll, since a combinator may poll it with a different waker.
type sharedWaker struct {
	mu sync.Mutex
	w  Waker
}

func (s *sharedWaker) set(w Waker) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

// wake runs on a goroutine the context package starts, which nobody can recover: a
// waker (user code) that panics there would crash the process. Its panic is recovered
// and logged instead, as the runtime does for the wakers it calls on goroutines of its
// own (timers, task completion). A runtime.Goexit only ends that goroutine.
func (s *sharedWaker) wake() {
	s.mu.Lock()
	w := s.w
	s.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			log.Printf("blitzio: a Waker panicked when the context of a dial ended (the dial sees the context's end at its next poll): %v\n%s", r, debug.Stack())
		}
	}()
	w.Wake()
}

func (f *dialFuture) fail(err error) (Result[*TCPStream], bool) {
	f.cleanup()
	// As net.DialTCP: Source is the local address asked for and Addr the address
	// dialed (the one being tried when the context ended), never typed nils.
	raddr := f.raddr
	if raddr == nil {
		raddr = f.cur
	}
	return Result[*TCPStream]{Err: f.opErr(raddr, err)}, true
}

// opErr is err as a dial's *net.OpError naming raddr, as net's (err itself when it is
// one already).
func (f *dialFuture) opErr(raddr *net.TCPAddr, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		return err
	}
	var ra, la net.Addr
	if raddr != nil {
		ra = raddr
	}
	if f.laddr != nil {
		la = f.laddr
	}
	return &net.OpError{Op: "dial", Net: f.network, Source: la, Addr: ra, Err: err}
}

func (f *dialFuture) cleanup() {
	f.done = true
	if f.stopCtx != nil {
		f.stopCtx()
		f.stopCtx = nil
	}
	f.lookup.cancel()
	for _, rc := range []*dialRacer{&f.primary, &f.fallback} {
		rc.closeFD()
		rc.dropTimer()
	}
	f.dropFallbackTimer()
	if f.cancelTimeout != nil {
		f.cancelTimeout()
		f.cancelTimeout = nil
	}
}

func (f *dialFuture) Poll(cx *Context) (Result[*TCPStream], bool) {
	if f.done {
		return Result[*TCPStream]{Err: &net.OpError{Op: "dial", Net: f.network, Err: net.ErrClosed}}, true
	}
	if cx.rt == nil {
		return f.fail(errNoRuntime)
	}
	if !isTCPNetwork(f.network) {
		return f.fail(net.UnknownNetworkError(f.network))
	}
	if f.ctx != nil {
		// Store this poll's waker before checking the context, and register the
		// AfterFunc after: a cancel that lands after the check then finds the current
		// waker. Checked first, a cancel between the check and the update wakes the
		// waker of an earlier poll (another task's, or another combinator child's, if
		// the future moved) or, on the first poll, none at all; this poll returns
		// pending and nothing wakes it again.
		if f.ctx.Done() != nil {
			if f.ctxWaker == nil {
				f.ctxWaker = &sharedWaker{}
			}
			f.ctxWaker.set(cx.Waker())
		}
		if err := f.ctx.Err(); err != nil {
			if f.addrs == nil && f.raddr == nil {
				// Ended before anything was resolved: net resolves an IP literal
				// before it looks at the context, so its error names the address.
				f.raddr = literalTCPAddr(f.network, f.address)
			}
			return f.fail(mapContextErr(err))
		}
		if f.ctxWaker != nil && f.stopCtx == nil {
			f.stopCtx = context.AfterFunc(f.ctx, f.ctxWaker.wake)
		}
	}
	if f.addrs == nil {
		if r, ok := f.pollResolve(cx); !ok {
			return r, false
		} else if r.Err != nil {
			return r, true
		}
	}
	if !f.split {
		f.split = true
		if f.address != "" && f.laddr != nil && len(f.laddr.IP) > 0 && !f.laddr.IP.IsUnspecified() {
			// As net.Dialer with a LocalAddr: only the addresses of its family (a
			// wildcard, 0.0.0.0 or ::, restricts none).
			v4 := f.laddr.IP.To4() != nil
			var kept []*net.TCPAddr
			for _, a := range f.addrs {
				if len(a.IP) == 0 || (a.IP.To4() != nil) == v4 {
					kept = append(kept, a)
				}
			}
			if len(kept) == 0 && len(f.addrs) > 0 {
				host, _, _ := net.SplitHostPort(f.address)
				return f.fail(&net.AddrError{Err: "no suitable address found", Addr: host})
			}
			f.addrs = kept
		}
		f.primary.addrs = f.addrs
		if len(f.addrs) == 0 {
			return f.fail(errors.New("no addresses"))
		}
		// Whatever the LocalAddr, as net's: one with an IP has left only the
		// addresses of its family above, and one without (a source port) races both.
		if f.network == "tcp" && len(f.addrs) > 1 && f.fallbackDelay >= 0 {
			// As net.Dialer (dual stack, RFC 6555 "Happy Eyeballs"): the addresses of
			// the first one's family are tried in order, and those of the other family
			// start too if no connection is made within dialFallbackDelay or once the
			// first family's have all failed. The first connection made wins.
			f.primary.addrs, f.fallback.addrs = partitionByFamily(f.addrs)
		}
	}
	if s := f.primary.poll(cx, f); s != nil {
		return f.won(s)
	}
	if len(f.fallback.addrs) > 0 && !f.fallback.started {
		if !f.primary.failed {
			if f.fallbackTimer == nil {
				d := f.fallbackDelay
				if d == 0 {
					d = dialFallbackDelay
				}
				f.fallbackTimer = Sleep(d)
			}
			if _, ok := f.fallbackTimer.Poll(cx); !ok {
				return Result[*TCPStream]{}, false
			}
		}
		f.fallback.started = true
		f.dropFallbackTimer()
	}
	if f.fallback.started {
		if s := f.fallback.poll(cx, f); s != nil {
			return f.won(s)
		}
	}
	if !f.primary.failed || (f.fallback.started && !f.fallback.failed) {
		return Result[*TCPStream]{}, false
	}
	// Every address failed: the error of the first one tried is the one that tells
	// most, as net's.
	err := f.primary.firstErr
	if err == nil {
		err = f.fallback.firstErr
	}
	return f.fail(err)
}

// dialFallbackDelay is how long a dial to a name of both address families waits for
// its first family before it tries the other as well: net.Dialer's default
// FallbackDelay.
const dialFallbackDelay = 300 * time.Millisecond

// partitionByFamily splits addrs into those of the first address's family and the rest,
// each in its order.
func partitionByFamily(addrs []*net.TCPAddr) (primaries, fallbacks []*net.TCPAddr) {
	v4 := addrs[0].IP.To4() != nil
	for _, a := range addrs {
		if (a.IP.To4() != nil) == v4 {
			primaries = append(primaries, a)
		} else {
			fallbacks = append(fallbacks, a)
		}
	}
	return primaries, fallbacks
}

// won hands the stream s made by one of the racers to the caller: the other's attempt
// is closed.
func (f *dialFuture) won(s *TCPStream) (Result[*TCPStream], bool) {
	f.cleanup()
	return Result[*TCPStream]{Value: s}, true
}

func (f *dialFuture) dropFallbackTimer() {
	if f.fallbackTimer != nil {
		f.fallbackTimer.Drop()
		f.fallbackTimer = nil
	}
}

// dialRacer tries a list of addresses one after the other (net's dialSerial): a dial
// has one, or two racing (the address families of a dual-stack name, see Poll).
type dialRacer struct {
	addrs []*net.TCPAddr // addrs[0] is the one being tried
	fd    *netFD
	w     Waker
	// timer ends the current attempt at its share of the context's deadline.
	timer    *SleepFuture
	firstErr error
	// selfRetries counts the attempts made again on the current address because a
	// connection met itself.
	selfRetries     int
	started, failed bool
}

// poll makes progress on rc's attempts: the stream once one connects, nil while pending
// (rc.failed false) or once every address failed (rc.failed true).
func (rc *dialRacer) poll(cx *Context, f *dialFuture) *TCPStream {
	for !rc.failed {
		if rc.fd == nil {
			if len(rc.addrs) == 0 {
				rc.failed = true
				return nil
			}
			raddr := rc.addrs[0]
			f.cur = raddr
			if rc.timer == nil && f.ctx != nil {
				if dl, ok := f.ctx.Deadline(); ok {
					// As net's dialSerial: each address left gets an equal share of the
					// time left, at least 2 s, so that one address that never answers
					// does not use up the whole deadline.
					pd, ok := partialDeadline(time.Now(), dl, len(rc.addrs))
					if !ok {
						rc.next(f.opErr(raddr, timeoutError{}))
						continue
					}
					if pd.Before(dl) {
						rc.timer = SleepUntil(pd)
					}
				}
			}
			fd, err := f.start(cx, raddr)
			if err != nil {
				if !rc.retry(f, err) {
					rc.next(f.opErr(raddr, err))
				}
				continue
			}
			rc.fd = fd
		}
		if rc.timer != nil {
			if _, ok := rc.timer.Poll(cx); ok {
				rc.next(f.opErr(rc.addrs[0], timeoutError{}))
				continue
			}
		}
		// Wait for the connect to finish: the socket turns writable.
		fd := rc.fd
		_, err, ok := fd.pollIO(cx, dirWrite, &rc.w, func(sfd int) (int, error) {
			v, err := unix.GetsockoptInt(sfd, unix.SOL_SOCKET, unix.SO_ERROR)
			if err != nil {
				return 0, err
			}
			switch syscall.Errno(v) {
			case 0, unix.EISCONN:
				// No pending error can also mean "still connecting" (a spurious
				// wake): only a peer address says the connection is made.
				rsa, err := unix.Getpeername(sfd)
				if err == unix.ENOTCONN {
					return 0, unix.EAGAIN
				}
				if err == nil {
					fd.raddr = sockaddrToTCP(rsa)
				}
				return 0, err
			case unix.EINPROGRESS, unix.EALREADY, unix.EINTR:
				return 0, unix.EAGAIN
			}
			return 0, syscall.Errno(v)
		})
		if !ok {
			return nil
		}
		if err != nil {
			if !rc.retry(f, err) {
				rc.next(fd.opError("dial", "connect", err))
			}
			continue
		}
		if lsa, err := unix.Getsockname(int(fd.fd)); err == nil {
			fd.laddr = sockaddrToTCP(lsa)
		}
		if rc.retry(f, nil) {
			continue
		}
		rc.fd = nil
		rc.w = Waker{}
		rc.dropTimer()
		return &TCPStream{fd: fd}
	}
	return nil
}

// next records err as the current address's failure and moves on to the next address.
func (rc *dialRacer) next(err error) {
	if rc.firstErr == nil {
		rc.firstErr = err
	}
	rc.closeFD()
	rc.dropTimer()
	rc.addrs = rc.addrs[1:]
	rc.selfRetries = 0
}

// retry closes the current attempt and reports true when it should be made again to
// the same address, as net.DialTCP does, at most twice: when the kernel gave a socket
// with no local port asked for the very port it dials, TCP's simultaneous open connects
// the socket to itself (possible when nothing listens on a port of the local ephemeral
// range), and when connect fails with a spurious EADDRNOTAVAIL. err is the attempt's
// error (rc.fd may then be nil); nil for a connection made.
func (rc *dialRacer) retry(f *dialFuture, err error) bool {
	if rc.selfRetries >= 2 || (f.laddr != nil && f.laddr.Port != 0) {
		return false
	}
	if err != nil {
		if !errors.Is(err, unix.EADDRNOTAVAIL) {
			return false
		}
	} else {
		l, lok := rc.fd.laddr.(*net.TCPAddr)
		r, rok := rc.fd.raddr.(*net.TCPAddr)
		if !lok || !rok || l == nil || r == nil || l.Port != r.Port || !l.IP.Equal(r.IP) {
			return false
		}
	}
	rc.selfRetries++
	rc.closeFD()
	return true
}

func (rc *dialRacer) closeFD() {
	if rc.fd != nil {
		rc.fd.forget(dirWrite, &rc.w)
		rc.fd.Close()
		rc.fd = nil
	}
}

func (rc *dialRacer) dropTimer() {
	if rc.timer != nil {
		rc.timer.Drop()
		rc.timer = nil
	}
}

// partialDeadline is the deadline of one attempt of a dial with addrsLeft addresses
// left to try before deadline, as net's: an equal share of the time left, at least
// 2 s (taken from the addresses at the end of the list), or all of it when less is
// left. It reports false when the deadline has passed.
func partialDeadline(now, deadline time.Time, addrsLeft int) (time.Time, bool) {
	left := deadline.Sub(now)
	if left <= 0 {
		return time.Time{}, false
	}
	share := left / time.Duration(addrsLeft)
	const saneMinimum = 2 * time.Second
	if share < saneMinimum {
		share = min(left, saneMinimum)
	}
	return now.Add(share), true
}

func mapContextErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return timeoutError{}
	}
	return err
}

// pollResolve turns f.address into f.addrs, resolving a host name on the blocking pool.
func (f *dialFuture) pollResolve(cx *Context) (Result[*TCPStream], bool) {
	if !f.lookup.started() {
		resolver, host, port, err := splitDialAddress(f.resolver, f.network, f.address)
		if err != nil {
			return f.fail(err)
		}
		f.port = port
		if host == "" {
			// As net.Dial: an empty host (":80") is the local system, a nil IP that
			// start connects to over IPv4 (or IPv6 on "tcp6"). Resolving "" would
			// fail with "no such host".
			f.addrs = []*net.TCPAddr{{Port: port}}
			return Result[*TCPStream]{}, true
		}
		if ip, err := netipParse(host); err == nil {
			if !ipSuitsNetwork(f.network, ip.IP) {
				// As net's address filter: a literal of the other family is no
				// address to try, not a failed socket ("tcp6" with "127.0.0.1", or
				// with an IPv4-mapped "::ffff:127.0.0.1", which net counts as IPv4).
				return f.fail(&net.AddrError{Err: "no suitable address found", Addr: host})
			}
			f.addrs = []*net.TCPAddr{ip}
			f.addrs[0].Port = port
			return Result[*TCPStream]{}, true
		}
		f.lookup.start(cx, f.ctx, resolver, f.network, host)
	}
	r, ok := f.lookup.poll(cx)
	if !ok {
		return Result[*TCPStream]{}, false
	}
	if r.Err != nil {
		return f.fail(r.Err)
	}
	for _, ip := range r.Value {
		f.addrs = append(f.addrs, &net.TCPAddr{IP: ip.IP, Port: f.port, Zone: ip.Zone})
	}
	if f.addrs == nil {
		f.addrs = []*net.TCPAddr{}
	}
	return Result[*TCPStream]{}, true
}

// literalTCPAddr is address ("host:port") as the address net's resolver makes of it
// without a lookup (an IP literal and a port number that suit network), or nil.
func literalTCPAddr(network, address string) *net.TCPAddr {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil
	}
	a, err := netipParse(host)
	if err != nil || !ipSuitsNetwork(network, a.IP) {
		return nil
	}
	a.Port = int(p)
	return a
}

// ipSuitsNetwork is net's filter of resolved addresses: "tcp4" and "udp4" keep IPv4
// addresses (IPv4-mapped ones included), "tcp6" and "udp6" the IPv6 addresses that are
// not IPv4-mapped.
func ipSuitsNetwork(network string, ip net.IP) bool {
	switch network {
	case "tcp4", "udp4":
		return ip.To4() != nil
	case "tcp6", "udp6":
		return len(ip) == net.IPv6len && ip.To4() == nil
	}
	return true
}

func netipParse(host string) (*net.TCPAddr, error) {
	ip, zone := host, ""
	for i := 0; i < len(host); i++ {
		if host[i] == '%' {
			ip, zone = host[:i], host[i+1:]
			break
		}
	}
	p := net.ParseIP(ip)
	if p == nil {
		return nil, errors.New("not an IP literal")
	}
	return &net.TCPAddr{IP: p, Zone: zone}, nil
}

// start opens a socket for f.addrs[0] and begins the non-blocking connect.
// testHookDialBind, set by tests only, gives a dial with no local address asked for one
// to bind to (nil: none), so a test can make the kernel's choice of port.
var testHookDialBind func(raddr *net.TCPAddr) *net.TCPAddr

func (f *dialFuture) start(cx *Context, raddr *net.TCPAddr) (*netFD, error) {
	if raddr == nil {
		return nil, errMissingAddress
	}
	family, _, err := inetFamily(f.network, raddr.IP)
	if err != nil {
		return nil, err
	}
	if family == unix.AF_INET6 && f.network == "tcp" && (raddr.IP.To4() != nil || len(raddr.IP) == 0) {
		// inetFamily gives a wildcard the dual-stack socket a listener wants; a dial
		// picks as net's does (favoriteAddrFamily): IPv4 for an IPv4 address and for a
		// nil one, the local system, which connect then reaches on 127.0.0.1 like
		// net.Dial(":80") does. A dual-stack socket would connect to ::1 instead.
		family = unix.AF_INET
	}
	// An IPv6 local address (the wildcard "::": a specific one kept only addresses
	// of its family) with an IPv4 peer on "tcp": a dual-stack IPv6 socket, as net's,
	// which reaches the peer as ::ffff:a.b.c.d.
	dual := family == unix.AF_INET && f.network == "tcp" && f.laddr != nil &&
		len(f.laddr.IP) == net.IPv6len && f.laddr.IP.To4() == nil
	if dual {
		family = unix.AF_INET6
	}
	rsa, err := ipZoneToSockaddr(family, raddr.IP, raddr.Port, raddr.Zone)
	if err != nil {
		return nil, err
	}
	s, err := newSocket(family, unix.SOCK_STREAM, unix.IPPROTO_TCP)
	if err != nil {
		return nil, err
	}
	if dual {
		if err := unix.SetsockoptInt(s, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0); err != nil {
			unix.Close(s)
			return nil, os.NewSyscallError("setsockopt", err)
		}
	}
	fd := newNetFD(s, family, unix.SOCK_STREAM, f.network)
	fd.raddr = raddr
	if f.laddr != nil {
		// A failed bind or connect names the local address asked for as its Source,
		// as net's does; a connected stream's is the kernel's (see Poll).
		fd.laddr = f.laddr
	}
	unix.SetsockoptInt(s, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	setKeepAliveConfig(s, f.keepAlive) // as net.DialTCP: on, with net's defaults
	if f.control != nil {
		ctrlNet := "tcp4"
		if family == unix.AF_INET6 {
			ctrlNet = "tcp6"
		}
		if err := runControl(f.control, ctrlNet, raddr.String(), s); err != nil {
			return nil, err
		}
	}
	laddr := f.laddr
	if laddr == nil && testHookDialBind != nil {
		laddr = testHookDialBind(raddr)
	}
	if laddr != nil {
		lsa, err := ipZoneToSockaddr(family, laddr.IP, laddr.Port, laddr.Zone)
		if err == nil {
			err = unix.Bind(s, lsa)
			if err != nil {
				err = os.NewSyscallError("bind", err)
			}
		}
		if err != nil {
			unix.Close(s)
			return nil, fd.opError("dial", "bind", err)
		}
	}
	// Connect first, register after: registered before connect, an unconnected socket
	// reports a hang-up at once.
	for {
		err = unix.Connect(s, rsa)
		if err != unix.EINTR {
			break
		}
	}
	switch err {
	case nil, unix.EINPROGRESS, unix.EALREADY:
	default:
		unix.Close(s)
		return nil, fd.opError("dial", "connect", err)
	}
	if _, err := fd.bindTo(cx.rt); err != nil {
		unix.Close(s)
		return nil, err
	}
	return fd, nil
}

func (f *dialFuture) Drop() {
	if !f.done {
		f.cleanup()
	}
}
