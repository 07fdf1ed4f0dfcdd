package stream

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// neverReady is a ConnStream that is never ready: each poll records the waker it was
// given, keeping one entry per distinct waker as blitzio's sockets do.
type neverReady struct {
	mu      sync.Mutex
	readers []blitzio.Waker
	writers []blitzio.Waker
}

func addDistinct(l []blitzio.Waker, w blitzio.Waker) []blitzio.Waker {
	for _, o := range l {
		if o.WillWake(w) {
			return l
		}
	}
	return append(l, w)
}

func (s *neverReady) PollRead(cx *blitzio.Context, _ []byte) (blitzio.Result[int], bool) {
	s.mu.Lock()
	s.readers = addDistinct(s.readers, cx.Waker())
	s.mu.Unlock()
	return blitzio.Result[int]{}, false
}

func (s *neverReady) PollWrite(cx *blitzio.Context, _ []byte) (blitzio.Result[int], bool) {
	s.mu.Lock()
	s.writers = addDistinct(s.writers, cx.Waker())
	s.mu.Unlock()
	return blitzio.Result[int]{}, false
}

func (s *neverReady) Close() error         { return nil }
func (s *neverReady) LocalAddr() net.Addr  { return nil }
func (s *neverReady) RemoteAddr() net.Addr { return nil }

// Regression: Read and Write ended by a deadline leave their waker with the stream
// (nothing can withdraw it). The Conn used pooled parkers, so calls on many Conns left
// the wakers of other connections' calls in each stream's list, and every readiness
// woke them all: net/http over the adapter, which cancels a background read with a past
// deadline on every request, slowed to a crawl at 100 connections. Each Conn must now
// register one waker per direction, whatever its calls and their number.
func TestConnRegistersOneWakerPerDirection(t *testing.T) {
	const conns, calls = 32, 20
	streams := make([]*neverReady, conns)
	var wg sync.WaitGroup
	for i := range streams {
		s := &neverReady{}
		streams[i] = s
		c := NewConn(s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 8)
			for range calls {
				// A deadline just ahead: the call parks, then times out, like
				// net/http's abortPendingRead.
				c.SetDeadline(time.Now().Add(200 * time.Microsecond))
				if _, err := c.Read(buf); !isTimeout(err) {
					t.Errorf("Read: %v, want a timeout", err)
					return
				}
				c.SetDeadline(time.Now().Add(200 * time.Microsecond))
				if _, err := c.Write(buf); !isTimeout(err) {
					t.Errorf("Write: %v, want a timeout", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// At most one per direction. (A call whose deadline passed before its first poll,
	// on a stalled machine, polls nothing: zero is possible, so the test only asks that
	// some calls polled at all.)
	polled := 0
	for i, s := range streams {
		if len(s.readers) > 1 || len(s.writers) > 1 {
			t.Fatalf("stream %d: %d distinct read wakers and %d write wakers after %d timed-out calls; want at most 1 each",
				i, len(s.readers), len(s.writers), calls)
		}
		polled += len(s.readers) + len(s.writers)
	}
	if polled == 0 {
		t.Fatal("no call polled its stream before its deadline: the test checked nothing")
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
