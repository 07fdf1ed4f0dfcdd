//go:build linux || darwin || freebsd

package stream

import (
	"net"
	"sync"

	"github.com/blitzgo/blitz/blitzio"
)

// Listener is an async listener seen as a net.Listener (on the platforms where blitzio
// has sockets: Linux, macOS, FreeBSD), for goroutine code such as
// http.Server.Serve: Accept blocks the calling goroutine (parked on a channel, no thread
// held, no spinning) until the runtime's driver reports a connection, and returns it as
// a *Conn. Close unblocks a waiting Accept with net.ErrClosed. Make one with
// NewTCPListener or NewUnixListener.
type Listener struct {
	rt     *blitzio.Runtime
	accept func(cx *blitzio.Context) (blitzio.Result[ConnStream], bool)
	addr   net.Addr
	close  func() error
	mu     sync.Mutex // one Accept polls at a time (the listener has one accept waker)
	p      connParker // parks Accept; the listener's own, for the reason Conn gives
	closed chan struct{}
	once   sync.Once
}

// NewTCPListener returns l as a net.Listener whose connections are served by rt's
// driver. The Listener owns l.
func NewTCPListener(rt *blitzio.Runtime, l *blitzio.TCPListener) *Listener {
	if rt == nil || l == nil {
		panic("stream: NewTCPListener with a nil runtime or listener")
	}
	return &Listener{rt: rt, addr: l.Addr(), close: l.Close, closed: make(chan struct{}),
		accept: func(cx *blitzio.Context) (blitzio.Result[ConnStream], bool) {
			r, ok := l.PollAccept(cx)
			if !ok || r.Err != nil {
				return blitzio.Result[ConnStream]{Err: r.Err}, ok
			}
			return blitzio.Result[ConnStream]{Value: r.Value.Conn}, true
		}}
}

// Accept implements net.Listener.
func (l *Listener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p.ch == nil { // the first Accept (l.mu is held)
		l.p.init(l.rt)
	}
	p := &l.p
	cx := p.cx
	for {
		select {
		case <-l.closed:
			return nil, &net.OpError{Op: "accept", Net: l.addr.Network(), Addr: l.addr, Err: net.ErrClosed}
		default:
		}
		r, ok := l.accept(cx)
		if ok {
			if r.Err != nil {
				return nil, r.Err
			}
			return NewConn(r.Value), nil
		}
		select {
		case <-p.ch:
		case <-l.closed:
		}
	}
}

// Close implements net.Listener: a waiting Accept returns net.ErrClosed. A second Close
// returns an error wrapping net.ErrClosed.
func (l *Listener) Close() error {
	err := error(&net.OpError{Op: "close", Net: l.addr.Network(), Addr: l.addr, Err: net.ErrClosed})
	l.once.Do(func() {
		close(l.closed)
		err = l.close()
	})
	return err // from a second call: closed before, as net.TCPListener's reports
}

// Addr implements net.Listener.
func (l *Listener) Addr() net.Addr { return l.addr }

// NewUnixListener returns l as a net.Listener whose connections are served by rt's
// driver. The Listener owns l.
func NewUnixListener(rt *blitzio.Runtime, l *blitzio.UnixListener) *Listener {
	if rt == nil || l == nil {
		panic("stream: NewUnixListener with a nil runtime or listener")
	}
	var pending blitzio.Future[blitzio.Result[*blitzio.UnixStream]]
	return &Listener{rt: rt, addr: l.Addr(), close: l.Close, closed: make(chan struct{}),
		accept: func(cx *blitzio.Context) (blitzio.Result[ConnStream], bool) {
			// One accept future at a time, kept across polls (Accept is serialised by
			// the Listener's mutex): a connection it has taken is never lost.
			if pending == nil {
				pending = l.Accept()
			}
			r, ok := pending.Poll(cx)
			if !ok {
				return blitzio.Result[ConnStream]{}, false
			}
			pending = nil
			if r.Err != nil {
				return blitzio.Result[ConnStream]{Err: r.Err}, true
			}
			return blitzio.Result[ConnStream]{Value: r.Value}, true
		}}
}
