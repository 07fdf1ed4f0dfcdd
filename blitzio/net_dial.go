//go:build linux || darwin || freebsd

package blitzio

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"
)

// hostLookup resolves a dial's host name on the blocking pool (net's resolver blocks).
type hostLookup struct {
	h *JoinHandle[Result[[]net.IPAddr]]
	// stop cancels the lookup's context: aborting h cannot stop a function already
	// running on the blocking pool, and without it the lookup would run on to its
	// own DNS timeouts, holding a blocking-pool goroutine that Runtime.Close waits
	// for.
	stop context.CancelFunc
}

func (l *hostLookup) started() bool { return l.h != nil }

// start begins resolving host for network ("tcp", "udp4", ...): only the addresses of
// the network's family are kept, and none is an error, as net's address filter. The
// lookup's context derives from parent (nil: none), so the dial's context ends it.
func (l *hostLookup) start(cx *Context, parent context.Context, resolver *net.Resolver, network, host string) {
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := context.WithCancel(parent)
	l.stop = stop
	h := SpawnBlocking(cx, func() Result[[]net.IPAddr] {
		ips, err := resolver.LookupIPAddr(ctx, host)
		if err == nil {
			kept := ips[:0]
			for _, ip := range ips {
				if ipSuitsNetwork(network, ip.IP) {
					kept = append(kept, ip)
				}
			}
			ips = kept
			if len(ips) == 0 {
				err = &net.AddrError{Err: "no suitable address found", Addr: host}
			}
		}
		return Result[[]net.IPAddr]{Value: ips, Err: err}
	})
	l.h = &h
}

// splitDialAddress splits a dial's "host:port" and looks the port up (a service name
// such as "http" too) with resolver, or net.DefaultResolver if it is nil, which it
// returns for the host's lookup.
func splitDialAddress(resolver *net.Resolver, network, address string) (*net.Resolver, string, int, error) {
	if address == "" {
		return nil, "", 0, errMissingAddress // as net's, not SplitHostPort's "missing port"
	}
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, "", 0, err
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	port, err := resolver.LookupPort(context.Background(), network, portStr)
	if err != nil {
		return nil, "", 0, err
	}
	return resolver, host, port, nil
}

// poll reports the lookup's addresses or its error once it ended.
func (l *hostLookup) poll(cx *Context) (Result[[]net.IPAddr], bool) {
	r, ok := l.h.Poll(cx)
	if !ok {
		return Result[[]net.IPAddr]{}, false
	}
	l.h = nil
	l.stop()
	l.stop = nil
	if r.Err != nil {
		return Result[[]net.IPAddr]{Err: r.Err}, true
	}
	return r.Value, true
}

// cancel ends a lookup under way (the dial was dropped or failed).
func (l *hostLookup) cancel() {
	if l.h != nil {
		l.h.Abort()
		l.h = nil
	}
	if l.stop != nil {
		l.stop()
		l.stop = nil
	}
}

// DialUDP connects a UDP socket to address ("host:port") on network "udp", "udp4" or
// "udp6", as net.Dialer's Dial does for those networks. A host name is resolved with
// d.Resolver on the runtime's blocking pool, and the socket is connected to the first
// of its addresses that suits the network (and LocalAddr's family, when LocalAddr has
// an IP other than a wildcard): a UDP connect does not wait for the peer, so no other
// address is tried. An empty host is the local system, as in net. d.Timeout and ctx
// bound the resolution; an error that ends it by them is a timeout net.Error or wraps
// ctx.Err(), as DialContext's.
//
// LocalAddr's IP, port and zone are the local address (nil: the system picks), and
// Control is called before the socket is bound and connected, with network "udp4" or
// "udp6". KeepAlive, KeepAliveConfig and FallbackDelay do not apply. The future owns
// the lookup: dropping it cancels the lookup.
func (d *Dialer) DialUDP(ctx context.Context, network, address string) Future[Result[*UDPConn]] {
	if ctx == nil {
		panic("blitzio: Dialer.DialUDP called with a nil context.Context")
	}
	f := &udpDialFuture{ctx: ctx, network: network, address: address, control: d.Control, resolver: d.Resolver}
	if d.LocalAddr != nil {
		f.laddr = &net.UDPAddr{IP: d.LocalAddr.IP, Port: d.LocalAddr.Port, Zone: d.LocalAddr.Zone}
	}
	if d.Timeout != 0 {
		f.ctx, f.cancelTimeout = context.WithDeadline(ctx, time.Now().Add(d.Timeout))
	}
	return f
}

// DialUnix connects to the Unix stream socket named address (a path, or '@' and a
// Linux abstract name) on network "unix", as net.Dialer's Dial does. A Unix connect
// completes or fails at once (a listener whose backlog is full fails it with EAGAIN,
// as in Go's net), so the future is ready at its first poll; ctx and d.Timeout are
// checked then. Control is called before the connect, with network "unix". The other
// fields do not apply.
func (d *Dialer) DialUnix(ctx context.Context, network, address string) Future[Result[*UnixStream]] {
	if ctx == nil {
		panic("blitzio: Dialer.DialUnix called with a nil context.Context")
	}
	f := &unixDialFuture{ctx: ctx, network: network, address: address, control: d.Control}
	if d.Timeout != 0 {
		f.ctx, f.cancelTimeout = context.WithDeadline(ctx, time.Now().Add(d.Timeout))
	}
	return f
}

type udpDialFuture struct {
	ctx           context.Context
	cancelTimeout context.CancelFunc
	network       string
	address       string
	laddr         *net.UDPAddr
	raddr         *net.UDPAddr // once known, for errors
	control       func(network, address string, c syscall.RawConn) error
	resolver      *net.Resolver
	port          int
	lookup        hostLookup
	done          bool
}

func (f *udpDialFuture) cleanup() {
	f.done = true
	f.lookup.cancel()
	if f.cancelTimeout != nil {
		f.cancelTimeout()
		f.cancelTimeout = nil
	}
}

func (f *udpDialFuture) fail(err error) (Result[*UDPConn], bool) {
	f.cleanup()
	var oe *net.OpError
	if errors.As(err, &oe) {
		return Result[*UDPConn]{Err: err}, true
	}
	var la, ra net.Addr
	if f.laddr != nil {
		la = f.laddr
	}
	if f.raddr != nil {
		ra = f.raddr
	}
	return Result[*UDPConn]{Err: &net.OpError{Op: "dial", Net: f.network, Source: la, Addr: ra, Err: err}}, true
}

func (f *udpDialFuture) connect(raddr *net.UDPAddr) (Result[*UDPConn], bool) {
	f.raddr = raddr
	c, err := udpSocket("dial", f.network, f.laddr, raddr, f.control)
	if err != nil {
		return f.fail(err)
	}
	f.cleanup()
	return Result[*UDPConn]{Value: c}, true
}

// suits reports whether ip may be dialed: of the network's family, and of the local
// address's when it has an IP that is not a wildcard (as net's, which dials any address
// from 0.0.0.0 or ::, on a dual-stack socket when needed).
func (f *udpDialFuture) suits(ip net.IP) bool {
	if !ipSuitsNetwork(f.network, ip) {
		return false
	}
	if f.laddr == nil || len(f.laddr.IP) == 0 || f.laddr.IP.IsUnspecified() || ip.IsUnspecified() {
		return true
	}
	return (f.laddr.IP.To4() != nil) == (ip.To4() != nil)
}

func (f *udpDialFuture) Poll(cx *Context) (Result[*UDPConn], bool) {
	if f.done {
		return Result[*UDPConn]{Err: &net.OpError{Op: "dial", Net: f.network, Err: net.ErrClosed}}, true
	}
	if cx.rt == nil {
		return f.fail(errNoRuntime)
	}
	if !isUDPNetwork(f.network) {
		return f.fail(net.UnknownNetworkError(f.network))
	}
	if err := f.ctx.Err(); err != nil {
		return f.fail(mapContextErr(err))
	}
	if !f.lookup.started() {
		resolver, host, port, err := splitDialAddress(f.resolver, f.network, f.address)
		if err != nil {
			return f.fail(err)
		}
		f.port = port
		if host == "" {
			return f.connect(&net.UDPAddr{Port: port}) // the local system, as net's
		}
		if ip, err := netipParse(host); err == nil {
			if !f.suits(ip.IP) {
				return f.fail(&net.AddrError{Err: "no suitable address found", Addr: host})
			}
			return f.connect(&net.UDPAddr{IP: ip.IP, Port: port, Zone: ip.Zone})
		}
		f.lookup.start(cx, f.ctx, resolver, f.network, host)
	}
	r, ok := f.lookup.poll(cx)
	if !ok {
		return Result[*UDPConn]{}, false
	}
	if r.Err != nil {
		if err := f.ctx.Err(); err != nil {
			// The lookup ended because the dial's context did: report that, as
			// DialContext does (errors.Is(err, context.Canceled), or a timeout).
			return f.fail(mapContextErr(err))
		}
		return f.fail(r.Err)
	}
	for _, ip := range r.Value {
		if f.suits(ip.IP) {
			return f.connect(&net.UDPAddr{IP: ip.IP, Port: f.port, Zone: ip.Zone})
		}
	}
	host, _, _ := net.SplitHostPort(f.address)
	return f.fail(&net.AddrError{Err: "no suitable address found", Addr: host})
}

// Drop cancels a lookup under way.
func (f *udpDialFuture) Drop() {
	if !f.done {
		f.cleanup()
	}
}

type unixDialFuture struct {
	ctx           context.Context
	cancelTimeout context.CancelFunc
	network       string
	address       string
	control       func(network, address string, c syscall.RawConn) error
	done          bool
}

func (f *unixDialFuture) Poll(cx *Context) (Result[*UnixStream], bool) {
	if f.done {
		return Result[*UnixStream]{Err: &net.OpError{Op: "dial", Net: f.network, Err: net.ErrClosed}}, true
	}
	f.Drop()
	raddr := &net.UnixAddr{Name: f.address, Net: f.network}
	if err := f.ctx.Err(); err != nil {
		return Result[*UnixStream]{Err: &net.OpError{Op: "dial", Net: f.network, Addr: raddr, Err: mapContextErr(err)}}, true
	}
	if f.address == "" {
		raddr = nil
	}
	s, err := dialUnix(f.network, nil, raddr, f.control)
	return Result[*UnixStream]{Value: s, Err: err}, true
}

// Drop releases the timeout's timer.
func (f *unixDialFuture) Drop() {
	f.done = true
	if f.cancelTimeout != nil {
		f.cancelTimeout()
		f.cancelTimeout = nil
	}
}
