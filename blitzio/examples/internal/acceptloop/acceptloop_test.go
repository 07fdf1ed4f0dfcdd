//go:build linux || darwin || freebsd

package acceptloop

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// script is a Listener that fails the accepts its script says to fail, in order, and
// hands the others to a real listener. A nil entry means "accept for real".
type script struct {
	real *blitzio.TCPListener
	mu   sync.Mutex
	plan []error
}

func (s *script) Accept() blitzio.Future[blitzio.Result[blitzio.Accepted]] {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.plan) > 0 {
		err := s.plan[0]
		s.plan = s.plan[1:]
		if err != nil {
			return blitzio.Ready(blitzio.Result[blitzio.Accepted]{Err: err})
		}
	}
	return s.real.Accept()
}

// tempErr is a net.Error that says it is temporary, as net/http's Serve looks for.
type tempErr struct{}

func (tempErr) Error() string   { return "injected temporary error" }
func (tempErr) Timeout() bool   { return false }
func (tempErr) Temporary() bool { return true }

// recorder records the back-offs and the log lines, and stands in for the timer so the
// test does not wait: every back-off is over at once.
type recorder struct {
	mu     sync.Mutex
	delays []time.Duration
	logs   []string
}

func (r *recorder) sleep(d time.Duration) blitzio.Future[struct{}] {
	r.mu.Lock()
	r.delays = append(r.delays, d)
	r.mu.Unlock()
	return blitzio.Ready(struct{}{})
}

func (r *recorder) logf(format string, args ...any) {
	r.mu.Lock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *recorder) snapshot() ([]time.Duration, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.delays...), append([]string(nil), r.logs...)
}

type fixture struct {
	rt       *blitzio.Runtime
	real     *blitzio.TCPListener
	stop     *blitzio.Shutdown
	accepted chan blitzio.Accepted
	ended    chan error // Run's result (or the task's error), once it returns
}

// start runs Run over l in a task; accepted connections are sent on f.accepted.
func start(t *testing.T, l Listener, real *blitzio.TCPListener, cfg Config) *fixture {
	t.Helper()
	rt, err := blitzio.New(blitzio.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	f := &fixture{rt: rt, real: real, stop: blitzio.NewShutdown(), accepted: make(chan blitzio.Accepted, 16)}
	if cfg.Stop == nil {
		cfg.Stop = f.stop.Done
	}
	cfg.Handle = func(co *blitzio.Co, a blitzio.Accepted) bool {
		f.accepted <- a
		return true
	}
	f.ended = make(chan error, 1)
	h := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) error { return Run(co, l, cfg) }))
	go func() { v, err := h.Wait(); f.ended <- errors.Join(v, err) }()
	return f
}

func listen(t *testing.T) *blitzio.TCPListener {
	t.Helper()
	l, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// connect dials the listener and waits for the loop to hand the connection over.
func (f *fixture) connect(t *testing.T) {
	t.Helper()
	c, err := net.DialTimeout("tcp", f.real.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case a := <-f.accepted:
		a.Conn.Close()
	case err := <-f.ended:
		t.Fatalf("the accept loop ended (%v) instead of accepting the connection", err)
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting for the accept loop to accept a connection")
	}
}

// wait returns Run's result, failing the test if it does not end.
func (f *fixture) wait(t *testing.T, what string) error {
	t.Helper()
	select {
	case err := <-f.ended:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for the accept loop to end after %s", what)
		return nil
	}
}

func ms(ns ...int) []time.Duration {
	out := make([]time.Duration, len(ns))
	for i, n := range ns {
		out[i] = time.Duration(n) * time.Millisecond
	}
	return out
}

// Accept errors other than a closed listener are logged and retried with a back-off
// from 5 ms doubling to 1 s, reset by a successful accept; the loop keeps serving.
func TestAcceptErrorsAreRetried(t *testing.T) {
	real := listen(t)
	injected := []error{
		tempErr{},
		errors.New("injected unknown error"),
		&net.OpError{Op: "accept", Net: "tcp", Err: syscall.EPROTO},
		&net.OpError{Op: "accept", Net: "tcp", Err: syscall.EPERM},
	}
	var plan []error
	for i := range 12 {
		plan = append(plan, injected[i%len(injected)])
	}
	plan = append(plan, nil, tempErr{}, tempErr{}, nil)
	rec := &recorder{}
	f := start(t, &script{real: real, plan: plan}, real, Config{Logf: rec.logf, Sleep: rec.sleep})
	f.connect(t) // after 12 errors
	f.connect(t) // after 2 more
	delays, logs := rec.snapshot()
	want := append(ms(5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000, 1000), ms(5, 10)...)
	if fmt.Sprint(delays) != fmt.Sprint(want) {
		t.Errorf("back-offs %v, want %v", delays, want)
	}
	if len(logs) != 14 {
		t.Errorf("%d log lines for 14 accept errors: %q", len(logs), logs)
	}
	f.stop.Trigger()
	if err := f.wait(t, "the shutdown"); err != nil {
		t.Fatalf("the loop ended with %v after the shutdown, want nil", err)
	}
}

// A closed listener ends the loop with its error (no retry), even after retried errors.
func TestClosedListenerEndsLoop(t *testing.T) {
	real := listen(t)
	rec := &recorder{}
	f := start(t, &script{real: real, plan: []error{tempErr{}, tempErr{}}}, real, Config{Logf: rec.logf, Sleep: rec.sleep})
	f.connect(t)
	if err := real.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.wait(t, "the listener was closed"); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the loop ended with %v after the listener was closed, want net.ErrClosed", err)
	}
	if delays, _ := rec.snapshot(); len(delays) != 2 {
		t.Fatalf("back-offs %v: want only the 2 of the injected errors, none for the closed listener", delays)
	}
}

// A shutdown during a back-off ends the loop without waiting for the back-off.
func TestShutdownDuringBackoff(t *testing.T) {
	real := listen(t)
	sleeping := make(chan struct{})
	var once sync.Once
	cfg := Config{
		Logf: func(string, ...any) {},
		Sleep: func(time.Duration) blitzio.Future[struct{}] {
			once.Do(func() { close(sleeping) })
			return blitzio.Pending[struct{}]() // a back-off that never ends by itself
		},
	}
	f := start(t, &script{real: real, plan: []error{tempErr{}}}, real, cfg)
	select {
	case <-sleeping:
	case err := <-f.ended:
		t.Fatalf("the accept loop ended (%v) instead of backing off", err)
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting for the loop to back off")
	}
	f.stop.Trigger()
	if err := f.wait(t, "a shutdown during a back-off"); err != nil {
		t.Fatalf("the loop ended with %v, want nil", err)
	}
}

// With the default timer and logger: a few errors, then a real connection is served.
func TestDefaultBackoffStillAccepts(t *testing.T) {
	real := listen(t)
	f := start(t, &script{real: real, plan: []error{tempErr{}, tempErr{}, tempErr{}}}, real, Config{})
	f.connect(t)
	f.stop.Trigger()
	if err := f.wait(t, "the shutdown"); err != nil {
		t.Fatalf("the loop ended with %v, want nil", err)
	}
}
