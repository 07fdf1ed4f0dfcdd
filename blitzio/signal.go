package blitzio

import (
	"errors"
	"os"
	"os/signal"
	"sync"
)

// Signals are process-wide, as in package os/signal: a SignalListener asks the process
// to deliver some signals to it instead of taking their default action (exiting, for an
// interrupt), and tasks await them without a goroutine of their own. Several listeners
// may hear the same signal: each one is told. When the last listener of a signal closes,
// its default action comes back (os/signal's Stop), so a process that stops listening
// for interrupts can be interrupted again.
//
// Deliveries coalesce, as Tokio's do: signals that arrive while a listener has not yet
// received the previous one are reported once. A listener is for one task at a time
// (Recv's future is reused); make one listener per task that waits.

// ErrListenerClosed is returned by a SignalListener's Recv after Close.
var ErrListenerClosed = errors.New("blitzio: signal listener closed")

// SignalKind names a signal portably: the same Go code gets the right number on every
// operating system (on Linux SIGUSR1 is 10, on macOS 30). Its methods give the os.Signal
// for the platform the program runs on.
type SignalKind uint8

// The signal kinds. Not every platform has every kind: Windows has only SignalInterrupt (and
// SignalTerminate, for console close events); Supported reports it.
const (
	SignalInterrupt    SignalKind = iota // SIGINT, ctrl-c
	SignalTerminate                      // SIGTERM: a polite request to stop
	SignalHangup                         // SIGHUP: the terminal went away; daemons reload config
	SignalQuit                           // SIGQUIT, ctrl-\
	SignalUser1                          // SIGUSR1
	SignalUser2                          // SIGUSR2
	SignalChild                          // SIGCHLD: a child process changed state
	SignalWindowChange                   // SIGWINCH: the terminal was resized
	SignalPipe                           // SIGPIPE: write to a closed pipe
	SignalAlarm                          // SIGALRM
	numSignalKinds
)

var signalKindNames = [numSignalKinds]string{"interrupt", "terminate", "hangup", "quit", "user1", "user2", "child", "window-change", "pipe", "alarm"}

// String returns the kind's name ("interrupt", "user1", ...).
func (k SignalKind) String() string {
	if k < numSignalKinds {
		return signalKindNames[k]
	}
	return "SignalKind(" + itoa(int(k)) + ")"
}

// Signal returns the platform's os.Signal for k, or nil if the platform does not have
// it.
func (k SignalKind) Signal() os.Signal {
	if k < numSignalKinds {
		return platformSignals[k]
	}
	return nil
}

// Supported reports whether the platform has k.
func (k SignalKind) Supported() bool { return k.Signal() != nil }

// itoa is strconv.Itoa, without importing strconv for one error message.
func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	// The magnitude as a uint: -n overflows for math.MinInt, whose magnitude only an
	// unsigned word holds (two's complement negation gives it).
	u := uint(n)
	if n < 0 {
		u = -u
	}
	for u > 0 {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
	}
	if n < 0 {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// signalHub fans each os.Signal out to its listeners: one os/signal channel and one
// goroutine per signal in use (not per listener), so a million listeners cost a million
// small structs, not a million goroutines.
type signalHub struct {
	mu    sync.Mutex
	perSg map[os.Signal]*signalRoute
}

type signalRoute struct {
	ch        chan os.Signal
	listeners map[*SignalListener]struct{}
	stop      chan struct{}
}

var hub = signalHub{perSg: map[os.Signal]*signalRoute{}}

func (h *signalHub) add(l *SignalListener) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range l.sigs {
		r := h.perSg[s]
		if r == nil {
			// A buffer of 1 is enough: deliveries coalesce, and the route goroutine
			// drains it promptly.
			r = &signalRoute{ch: make(chan os.Signal, 1), listeners: map[*SignalListener]struct{}{}, stop: make(chan struct{})}
			h.perSg[s] = r
			// Notify before returning from NewSignalListener: a signal sent right after
			// it returns must be heard, not take its default action.
			signal.Notify(r.ch, s)
			go r.run()
		}
		r.listeners[l] = struct{}{}
	}
}

func (h *signalHub) remove(l *SignalListener) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range l.sigs {
		r := h.perSg[s]
		if r == nil {
			continue
		}
		delete(r.listeners, l)
		if len(r.listeners) == 0 {
			signal.Stop(r.ch) // the default action comes back
			close(r.stop)
			delete(h.perSg, s)
		}
	}
}

func (r *signalRoute) run() {
	var ls []*SignalListener
	for {
		select {
		case s := <-r.ch:
			hub.mu.Lock()
			ls = ls[:0]
			for l := range r.listeners {
				ls = append(ls, l)
			}
			hub.mu.Unlock()
			for _, l := range ls {
				l.deliver(s)
			}
		case <-r.stop:
			return
		}
	}
}

// SignalListener receives some signals for the tasks of any runtime. Create it with
// ListenSignals and Close it when done.
type SignalListener struct {
	sigs []os.Signal

	mu      sync.Mutex
	pending os.Signal // the signal not yet received, nil if none
	closed  bool
	waker   Waker
	recv    signalRecv
}

// ListenSignals starts listening for the given kinds: from when it returns, those
// signals are delivered to the listener instead of taking their default action. It
// fails if a kind is unknown or the platform does not have it, or if kinds is empty.
func ListenSignals(kinds ...SignalKind) (*SignalListener, error) {
	if len(kinds) == 0 {
		return nil, errors.New("blitzio: ListenSignals with no signal kinds")
	}
	l := &SignalListener{}
	for _, k := range kinds {
		s := k.Signal()
		if s == nil {
			return nil, errors.New("blitzio: signal " + k.String() + " is not available on this platform")
		}
		l.sigs = append(l.sigs, s)
	}
	l.recv.l = l
	hub.add(l)
	return l, nil
}

func (l *SignalListener) deliver(s os.Signal) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.pending = s
	w := l.waker
	l.waker = Waker{}
	l.mu.Unlock()
	w.Wake()
}

type signalRecv struct{ l *SignalListener }

// Poll implements Future.
func (r *signalRecv) Poll(cx *Context) (Result[os.Signal], bool) {
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.pending != nil:
		if !cx.ConsumeBudget() {
			return Result[os.Signal]{}, false
		}
		s := l.pending
		l.pending = nil
		return Result[os.Signal]{Value: s}, true
	case l.closed:
		return Result[os.Signal]{Err: ErrListenerClosed}, true
	}
	l.waker = cx.Waker()
	return Result[os.Signal]{}, false
}

// Recv returns a future of the next signal delivered to l (which one, when l listens for
// several), or ErrListenerClosed once l is closed. Signals that arrived since the last
// Recv are reported at once (coalesced into one). The future is owned by l and reused by
// the next call; a dropped Recv loses nothing.
func (l *SignalListener) Recv() Future[Result[os.Signal]] { return &l.recv }

// Close stops listening; a waiting Recv finishes with ErrListenerClosed. When no
// listener is left for a signal its default action comes back. Close is idempotent.
func (l *SignalListener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	w := l.waker
	l.waker = Waker{}
	l.mu.Unlock()
	hub.remove(l)
	w.Wake()
	return nil
}

// CtrlC returns a future that is ready when the process receives an interrupt (ctrl-c,
// SIGINT): Tokio's signal::ctrl_c. From the call on, interrupts are delivered to it
// instead of ending the process; once it is ready or dropped, the default action comes
// back (unless another listener still listens).
func CtrlC() Future[Result[struct{}]] {
	l, err := ListenSignals(SignalInterrupt)
	if err != nil {
		return Ready(Result[struct{}]{Err: err})
	}
	return &ctrlC{l: l}
}

type ctrlC struct {
	l    *SignalListener
	done bool
}

// Poll implements Future.
func (c *ctrlC) Poll(cx *Context) (Result[struct{}], bool) {
	if c.done {
		return Result[struct{}]{}, true
	}
	r, ok := c.l.recv.Poll(cx)
	if !ok {
		return Result[struct{}]{}, false
	}
	c.done = true
	c.l.Close()
	return Result[struct{}]{Err: r.Err}, true
}

// Drop implements Dropper: the listener is closed.
func (c *ctrlC) Drop() { c.l.Close() }
