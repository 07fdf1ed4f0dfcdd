//go:build linux || darwin || freebsd

package blitzio

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/blitzgo/blitz/blitzio/internal/poller"
)

// ErrOtherRuntime is returned (inside a *net.OpError) when a socket registered with one
// Runtime is used from a task or BlockOn of another: its readiness is delivered by the
// first runtime's driver only.
var ErrOtherRuntime = errors.New("blitzio: socket belongs to another runtime")

// errNoRuntime is returned when a socket is first used from a Context without a Runtime
// (NewContext(nil, ...)): there is no driver to register it with.
var errNoRuntime = errors.New("blitzio: socket operation polled without a runtime (use BlockOn or a task)")

// netFD is a non-blocking socket and its registration with a runtime's I/O driver.
//
// A socket made outside a task (ListenTCP, ListenUDP...) is registered lazily, by the
// first operation polled on it, with that operation's runtime: so a listener can be
// created before the runtime that serves it, and reads like net.ListenTCP.
//
// There is one per open socket, so its fields are sized to keep it in the 80-byte size
// class on 64-bit platforms (descriptor numbers fit an int32, families and socket types
// an int16).
type netFD struct {
	fd     int32
	family int16
	sotype int16
	net    string
	// laddr is the local address. An accepted connection leaves it nil until someone
	// asks (lazyLocal; see localAddr), and then it is written under bindMu.
	laddr net.Addr
	raddr net.Addr

	bindMu    sync.Mutex
	sio       atomic.Pointer[scheduledIO]
	closed    atomic.Bool
	lazyLocal bool
	// shared is set (under bindMu) when the socket may be open elsewhere too: File
	// duplicated it, or it was taken over from package net (systemd, say, keeps its
	// own descriptor of a socket it activates). A listener's Close then does not shut
	// the socket down for the others.
	shared bool
}

func newNetFD(fd, family, sotype int, network string) *netFD {
	return &netFD{fd: int32(fd), family: int16(family), sotype: int16(sotype), net: network}
}

// localAddr returns the local address. For an accepted TCP connection it asks the
// kernel (getsockname) the first time and keeps the answer: most servers never ask, and
// looking it up at every accept would cost a system call and 56 bytes per connection.
// Once the socket is closed an address never asked for is unknown (nil), as
// net.Conn.LocalAddr allows.
func (fd *netFD) localAddr() net.Addr {
	if !fd.lazyLocal {
		return fd.laddr
	}
	fd.bindMu.Lock()
	a := fd.laddr
	fd.bindMu.Unlock()
	if a != nil {
		return a
	}
	var sa unix.Sockaddr
	err := fd.control(func(s int) (err error) {
		sa, err = unix.Getsockname(s)
		return err
	})
	if err != nil {
		return nil
	}
	ta := sockaddrToTCP(sa)
	if ta == nil {
		return nil
	}
	fd.bindMu.Lock()
	if fd.laddr == nil { // a concurrent caller may have stored it first: keep one answer
		fd.laddr = ta
	}
	a = fd.laddr
	fd.bindMu.Unlock()
	return a
}

// bind returns the driver state, registering the socket with cx's runtime on first use.
func (fd *netFD) bind(cx *Context) (*scheduledIO, error) {
	if s := fd.sio.Load(); s != nil {
		if cx.rt != nil && s.drv != cx.rt.io {
			return nil, ErrOtherRuntime
		}
		return s, nil
	}
	if cx.rt == nil {
		return nil, errNoRuntime
	}
	return fd.bindTo(cx.rt)
}

func (fd *netFD) bindTo(rt *Runtime) (*scheduledIO, error) {
	fd.bindMu.Lock()
	defer fd.bindMu.Unlock()
	if fd.closed.Load() {
		return nil, net.ErrClosed
	}
	if s := fd.sio.Load(); s != nil {
		if s.drv != rt.io {
			return nil, ErrOtherRuntime
		}
		return s, nil
	}
	if rt.closed.Load() {
		return nil, ErrRuntimeClosed
	}
	s, err := rt.io.register(int(fd.fd))
	if err != nil {
		if errors.Is(err, errDriverClosed) {
			return nil, ErrRuntimeClosed
		}
		return nil, err
	}
	fd.sio.Store(s)
	return s, nil
}

// Close closes the socket. Operations waiting on it (in other tasks) fail with
// net.ErrClosed; one inside a system call finishes it first, and the descriptor is
// closed after it, so no operation ever touches a reused descriptor number.
func (fd *netFD) Close() error {
	if !fd.closed.CompareAndSwap(false, true) {
		return net.ErrClosed
	}
	fd.bindMu.Lock()
	s := fd.sio.Load()
	fd.bindMu.Unlock()
	if s == nil {
		closeFD(int(fd.fd))
		return nil
	}
	if s.close() { // false when the runtime's shutdown closed it already: fine
		s.waitReleased()
	}
	return nil
}

// stopListening makes a listening socket refuse new connections now, before Close. On
// io_uring the descriptor itself is closed only when the cancelled accept's completion
// arrives, and until then the kernel would still complete handshakes into its backlog:
// a client could connect after Close (and a server's Shutdown) returned, as
// TestShutdownGraceful saw. shutdown(2) on a listening socket stops it listening on
// Linux; elsewhere it may fail (ENOTCONN), and the close alone does the work.
//
// Not for a socket that may be open elsewhere (shared): shut down, it would stop
// listening for every holder, a child process that was handed it included.
func (fd *netFD) stopListening() {
	fd.bindMu.Lock()
	shared := fd.shared
	fd.bindMu.Unlock()
	if shared {
		return
	}
	fd.control(func(s int) error { return unix.Shutdown(s, unix.SHUT_RDWR) })
}

// setShared marks the socket as possibly open elsewhere (see shared).
func (fd *netFD) setShared() {
	fd.bindMu.Lock()
	fd.shared = true
	fd.bindMu.Unlock()
}

// shutdownWrite shuts down the writing side (shutdown(SHUT_WR)) and wakes the writes
// waiting on the socket: a Unix stream socket's poll never reports its own SHUT_WR
// (unix_poll looks at the send buffer only), so a write waiting for room would sleep
// until the peer reads; woken, it fails with EPIPE.
func (fd *netFD) shutdownWrite() error {
	err := fd.control(func(s int) error { return unix.Shutdown(s, unix.SHUT_WR) })
	if err == nil {
		if s := fd.sio.Load(); s != nil && s.setReadiness(poller.WriteClosed) {
			wakeAll(s.takeWaiters(poller.WriteClosed, nil))
		}
	}
	return err
}

// control runs f on the descriptor, which stays open meanwhile.
func (fd *netFD) control(f func(int) error) error {
	if fd.closed.Load() {
		return net.ErrClosed
	}
	if s := fd.sio.Load(); s != nil {
		if !s.incref() {
			return net.ErrClosed
		}
		defer s.decref()
		return f(int(s.fd))
	}
	fd.bindMu.Lock()
	defer fd.bindMu.Unlock()
	if fd.closed.Load() {
		return net.ErrClosed
	}
	if s := fd.sio.Load(); s != nil { // bound meanwhile
		if !s.incref() {
			return net.ErrClosed
		}
		defer s.decref()
	}
	return f(int(fd.fd))
}

// ioOp is one non-blocking system call on the descriptor.
type ioOp func(fd int) (int, error)

// pollIO runs op once the socket is ready in direction d, retrying on EAGAIN after
// clearing the readiness it saw. pending is false when the result is final. A pending
// result has left cx's waker registered; *w records it for the future's Drop.
func (fd *netFD) pollIO(cx *Context, d direction, w *Waker, op ioOp) (n int, err error, ready bool) {
	return fd.pollIOShort(cx, d, w, op, 0)
}

// pollIOShort is pollIO for a stream read into a buffer of want bytes (want > 0): a read
// that returns fewer bytes than asked for has emptied the socket's receive queue, so the
// read readiness it saw is cleared then, as after EAGAIN, and the next read waits for
// the driver's next edge instead of making a system call that would fail with EAGAIN
// (Tokio's PollEvented does the same). One system call fewer per message for a
// request/response protocol. Data that arrives after the read raises a new edge: either
// the driver delivers it before the clear (the tick moved, so nothing is cleared) or
// after it (readiness is set again). One exception, as in Tokio: a TCP read also stops
// at an urgent-data mark (MSG_OOB, which Go programs do not use) with bytes queued
// behind it; those then wait for the peer's next segment.
func (fd *netFD) pollIOShort(cx *Context, d direction, w *Waker, op ioOp, want int) (n int, err error, ready bool) {
	s, err := fd.bind(cx)
	if err != nil {
		return 0, err, true
	}
	// fresh: a read on a socket whose readiness a poller that arms on demand has never
	// reported (io_uring's one-shot polls report only after a task waits): try the
	// system call once before waiting, as a new connection's first bytes are often
	// there already; waiting first would cost a round trip through the driver.
	fresh := d == dirRead && s.drv.armer != nil && s.readiness.Load()&(tickMask|uint64(readInterest)) == 0
	for {
		var ev uint64
		var ok bool
		if fresh {
			fresh = false
			ev, ok = s.readiness.Load(), true
		} else {
			ev, ok = s.pollReady(cx, d)
		}
		if !ok {
			*w = cx.Waker()
			return 0, nil, false
		}
		if ev&shutdownBit != 0 {
			return 0, net.ErrClosed, true
		}
		if cx.budgetSpent() {
			// Spent budget: yield before the system call, so that no bytes are taken
			// by a poll that then cannot report them.
			cx.wakeSelfYield()
			return 0, nil, false
		}
		n, err = s.runOp(op)
		if err == errOpClosed {
			return 0, net.ErrClosed, true
		}
		switch err {
		case unix.EAGAIN:
			mask := readInterestClear
			if d == dirWrite {
				mask = writeInterestClear
			}
			s.clearReadiness(ev, mask)
			continue
		case unix.EINTR:
			continue
		}
		if err == nil && n > 0 && n < want {
			// Readable only: a ReadClosed or Error seen with the data stays, so the
			// next read still runs and reports the end of file or the error (a FIN
			// that came with the last bytes raises no further edge).
			s.clearReadiness(ev, poller.Readable)
		}
		cx.ConsumeBudget()
		return n, err, true
	}
}

// errOpClosed is runOp's report that Close had begun: the operation did not run.
var errOpClosed = errors.New("blitzio: socket closing")

// runOp runs op on the descriptor, held open meanwhile (incref). The release is
// deferred: op may be user code (an AsyncIO function, a RawConn Read's) that panics or
// calls runtime.Goexit, and a reference it never gave back would make the socket's
// Close wait for it forever (waitReleased).
func (s *scheduledIO) runOp(op ioOp) (int, error) {
	if !s.incref() {
		return 0, errOpClosed
	}
	defer s.decref()
	return op(int(s.fd))
}

// forget removes the waker a pending operation left (its future's Drop), and wakes it.
// Entries are kept per waker, not per operation: two futures of one task waiting on this
// socket in the same direction (a read and a Readable in a Join, one of them under a
// Timeout) share one entry, and removing it for the one dropped would leave the other
// registered nowhere, asleep while its bytes arrive. The wake-up makes the task poll
// again, so a sibling still waiting registers anew; for the usual lone waiter it is one
// spurious poll of a task that is dropping a future anyway.
func (fd *netFD) forget(d direction, w *Waker) {
	if w.IsZero() {
		return
	}
	wk := *w
	*w = Waker{}
	if s := fd.sio.Load(); s != nil && s.removeWaiter(d, wk) {
		wk.Wake()
	}
}

// opError builds the error Go's net package would: a *net.OpError around an
// *os.SyscallError around the errno, so errors.Is(err, syscall.ECONNRESET) and
// errors.Is(err, net.ErrClosed) work.
func (fd *netFD) opError(op, sys string, err error) error {
	if err == nil {
		return nil
	}
	var errno syscall.Errno
	if errors.As(err, &errno) && !isSyscallError(err) {
		err = os.NewSyscallError(sys, errno)
	}
	src, addr := fd.localAddr(), fd.raddr
	if addr == nil && fd.sotype != unix.SOCK_DGRAM {
		// A listener: net names its address as Addr. (An unconnected datagram socket
		// keeps Source = local, Addr = nil, as net's ReadFrom errors do.)
		src, addr = nil, src
	}
	return &net.OpError{Op: op, Net: fd.net, Source: src, Addr: addr, Err: err}
}

func isSyscallError(err error) bool {
	var se *os.SyscallError
	return errors.As(err, &se)
}

// ---- addresses ----

func ipZoneToSockaddr(family int, ip net.IP, port int, zone string) (unix.Sockaddr, error) {
	if family == unix.AF_INET {
		ip4 := ip.To4()
		if len(ip) == 0 {
			ip4 = net.IPv4zero.To4()
		}
		if ip4 == nil {
			return nil, &net.AddrError{Err: "non-IPv4 address", Addr: ip.String()}
		}
		sa := &unix.SockaddrInet4{Port: port}
		copy(sa.Addr[:], ip4)
		return sa, nil
	}
	ip6 := ip.To16()
	if len(ip) == 0 || ip.Equal(net.IPv4zero) {
		// As net's: 0.0.0.0 on an IPv6 socket is the IPv6 wildcard, not the
		// v4-mapped ::ffff:0.0.0.0, which would limit a dual-stack socket ("tcp" or
		// "udp" on 0.0.0.0, as net.Listen binds it) to IPv4.
		ip6 = net.IPv6zero
	}
	if ip6 == nil {
		return nil, &net.AddrError{Err: "non-IPv6 address", Addr: ip.String()}
	}
	sa := &unix.SockaddrInet6{Port: port}
	copy(sa.Addr[:], ip6)
	if zone != "" {
		// ParseUint with 32 bits, not Atoi and a conversion: a number beyond 32 bits
		// (or a negative one) names no interface, and truncated it would name another
		// one (4294967298 would be interface 2).
		if id, err := strconv.ParseUint(zone, 10, 32); err == nil {
			sa.ZoneId = uint32(id)
		} else if ifi, err := net.InterfaceByName(zone); err == nil {
			sa.ZoneId = uint32(ifi.Index)
		} else {
			return nil, &net.AddrError{Err: "unknown zone", Addr: zone}
		}
	}
	return sa, nil
}

// setTTL6 sets the unicast hop limit of an IPv6 socket, and its IPv4 TTL as well: a
// dual-stack socket (a "tcp" or "udp" listener, or a connection it accepted) talking to
// an IPv4 peer sends IPv4 packets, whose TTL comes from IP_TTL; IPV6_UNICAST_HOPS does
// not apply to them, and setting it alone would silently change nothing. The IPv4
// option is best effort: some systems refuse it on an IPv6 socket, and a value valid as
// a hop limit (0) is not a valid TTL.
func (fd *netFD) setTTL6(ttl int) error {
	return fd.opError("set", "setsockopt", fd.control(func(s int) error {
		if err := unix.SetsockoptInt(s, unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS, ttl); err != nil {
			return err
		}
		unix.SetsockoptInt(s, unix.IPPROTO_IP, unix.IP_TTL, ttl)
		return nil
	}))
}

func zoneName(id uint32) string {
	if id == 0 {
		return ""
	}
	if ifi, err := net.InterfaceByIndex(int(id)); err == nil {
		return ifi.Name
	}
	return strconv.Itoa(int(id))
}

func sockaddrToTCP(sa unix.Sockaddr) *net.TCPAddr {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(netip.AddrFrom4(sa.Addr).AsSlice()), Port: sa.Port}
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(netip.AddrFrom16(sa.Addr).AsSlice()), Port: sa.Port, Zone: zoneName(sa.ZoneId)}
	}
	return nil
}

func sockaddrToUDP(sa unix.Sockaddr) *net.UDPAddr {
	if a := sockaddrToTCP(sa); a != nil {
		return &net.UDPAddr{IP: a.IP, Port: a.Port, Zone: a.Zone}
	}
	return nil
}

// inetFamily picks the address family for network ("tcp", "tcp4", "tcp6", and the udp
// forms) and an address: an IPv4 address or a "4" network gives AF_INET; a wildcard on
// the plain network gives a dual-stack AF_INET6 socket, as Go's net does.
func inetFamily(network string, ip net.IP) (family int, dualStack bool, err error) {
	switch network {
	case "tcp4", "udp4":
		if len(ip) > 0 && ip.To4() == nil {
			return 0, false, &net.AddrError{Err: "non-IPv4 address", Addr: ip.String()}
		}
		return unix.AF_INET, false, nil
	case "tcp6", "udp6":
		if len(ip) > 0 && ip.To4() != nil && !ip.IsUnspecified() {
			return 0, false, &net.AddrError{Err: "non-IPv6 address", Addr: ip.String()}
		}
		return unix.AF_INET6, false, nil
	case "tcp", "udp":
		if len(ip) == 0 || ip.IsUnspecified() {
			if ipv6Supported() {
				return unix.AF_INET6, true, nil
			}
			return unix.AF_INET, false, nil
		}
		if ip.To4() != nil {
			return unix.AF_INET, false, nil
		}
		return unix.AF_INET6, false, nil
	}
	return 0, false, net.UnknownNetworkError(network)
}

var ipv6Once = sync.OnceValue(func() bool {
	fd, err := newSocket(unix.AF_INET6, unix.SOCK_STREAM, 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
})

func ipv6Supported() bool { return ipv6Once() }
