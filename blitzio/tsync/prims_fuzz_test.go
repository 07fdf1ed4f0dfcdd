package tsync

import (
	"errors"
	"testing"
)

// semModel is the sequential specification of Semaphore: a FIFO queue in which the head
// collects released permits until it has what it asked for.
type semModel struct {
	avail  int64
	closed bool
	queue  []*semModelWaiter
}

type semModelWaiter struct {
	want, got int64
	granted   bool // got == want and out of the queue, not yet seen by Poll
	closedOut bool // failed by Close
	queued    bool
}

func (m *semModel) release(n int64) {
	for n > 0 && len(m.queue) > 0 {
		w := m.queue[0]
		need := w.want - w.got
		if n < need {
			w.got += n
			return
		}
		n -= need
		w.got = w.want
		w.granted, w.queued = true, false
		m.queue = m.queue[1:]
	}
	m.avail += n
}

func (m *semModel) remove(w *semModelWaiter) {
	for i, q := range m.queue {
		if q == w {
			m.queue = append(m.queue[:i], m.queue[i+1:]...)
			w.queued = false
			return
		}
	}
}

// FuzzSemaphore drives a Semaphore and semModel with the same operations (try-acquire,
// acquire futures polled by hand, drops of waiting futures, releases, forgets, added
// permits, close) and fails at the first difference in what is granted, in what order,
// or in the count of free permits.
func FuzzSemaphore(f *testing.F) {
	f.Add([]byte{2, 1, 3, 1, 1, 1, 5, 2, 2, 4, 0})
	f.Add([]byte{0, 1, 2, 1, 3, 3, 0, 5, 1, 2, 2})
	f.Add([]byte{1, 1, 2, 1, 1, 7, 2, 4, 0})
	f.Add([]byte{3, 1, 3, 1, 1, 3, 0, 4, 0, 4, 0, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		tc := newTestCx()
		initial := int64(ops[0] % 4)
		s := NewSemaphore(initial)
		m := &semModel{avail: initial}
		type live struct {
			f *AcquireFuture
			w *semModelWaiter
		}
		var futs []live
		var held []Permit
		var modelHeld []int64
		arg := func(i *int) int64 {
			*i++
			if *i < len(ops) {
				return int64(ops[*i])
			}
			return 0
		}
		poll := func(k int) {
			l := futs[k]
			r, ok := l.f.Poll(tc.cx)
			w := l.w
			switch {
			case w.closedOut:
				if !ok || !errors.Is(r.Err, ErrSemaphoreClosed) {
					t.Fatalf("future %d: want ErrSemaphoreClosed, got %v %v", k, r, ok)
				}
			case w.granted:
				if !ok || r.Err != nil || r.Value.N() != w.want {
					t.Fatalf("future %d: want %d permits, got %v %v", k, w.want, r, ok)
				}
				held = append(held, r.Value)
				modelHeld = append(modelHeld, w.want)
			default:
				if ok {
					t.Fatalf("future %d (want %d, queued %v) ready early: %v", k, w.want, w.queued, r)
				}
				return
			}
			futs = append(futs[:k], futs[k+1:]...)
		}
		for i := 1; i < len(ops); i++ {
			op := ops[i] % 8
			switch op {
			case 0: // TryAcquire
				n := arg(&i) % 4
				p, err := s.TryAcquire(n)
				var want error
				switch {
				case m.closed:
					want = ErrSemaphoreClosed
				case n > 0 && len(m.queue) > 0 || m.avail < n: // 0 permits: nobody to wait behind
					want = ErrNoPermits
				default:
					m.avail -= n
				}
				if err != want {
					t.Fatalf("op %d TryAcquire(%d) = %v, model %v", i, n, err, want)
				}
				if err == nil {
					held = append(held, p)
					modelHeld = append(modelHeld, n)
				}
			case 1: // a new Acquire, polled once
				n := arg(&i)%4 + 1
				w := &semModelWaiter{want: n}
				switch {
				case m.closed:
					w.closedOut = true
				case len(m.queue) == 0 && m.avail >= n:
					m.avail -= n
					w.granted = true
				default:
					if len(m.queue) == 0 {
						w.got, m.avail = m.avail, 0
					}
					w.queued = true
					m.queue = append(m.queue, w)
				}
				futs = append(futs, live{s.AcquireAsync(n), w})
				poll(len(futs) - 1)
			case 2: // poll every live future, oldest first
				for k := 0; k < len(futs); {
					before := len(futs)
					poll(k)
					if len(futs) == before {
						k++
					}
				}
			case 3: // drop a waiting future
				if len(futs) == 0 {
					continue
				}
				k := int(arg(&i)) % len(futs)
				l := futs[k]
				futs = append(futs[:k], futs[k+1:]...)
				l.f.Drop()
				w := l.w
				switch {
				case w.queued:
					m.remove(w)
					m.release(w.got)
				case w.granted:
					m.release(w.want)
				}
			case 4, 6: // release or forget a held permit
				if len(held) == 0 {
					continue
				}
				k := int(arg(&i)) % len(held)
				p, n := held[k], modelHeld[k]
				held = append(held[:k], held[k+1:]...)
				modelHeld = append(modelHeld[:k], modelHeld[k+1:]...)
				if op == 4 {
					p.Release()
					m.release(n)
				} else {
					p.Forget()
				}
			case 5:
				n := arg(&i) % 4
				s.AddPermits(n)
				m.release(n)
			case 7:
				s.Close()
				m.closed = true
				for _, w := range m.queue {
					m.avail += w.got
					w.got, w.closedOut, w.queued = 0, true, false
				}
				m.queue = nil
			}
			if got := s.Available(); got != m.avail {
				t.Fatalf("after op %d (%d): available %d, model %d", i, op, got, m.avail)
			}
		}
		for _, l := range futs {
			l.f.Drop()
		}
	})
}
