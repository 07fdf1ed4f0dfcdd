package tsync

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/blitzgo/blitz/blitzio"
)

// The channel benchmarks count one operation per message (or per round trip), so
// `go test -bench Chan -benchtime 1000000x` moves a million messages. Each benchmark
// runs its Go baseline as a sub-benchmark in the same run. The side that owns the b.Loop
// is the receiver (a task for ours, the benchmark goroutine for Go's), so the timed part
// ends when the last counted message has been received.

const benchChanCap = 1024

var benchWorkers = 2

func benchRuntime(b *testing.B) *blitzio.Runtime {
	rt, err := blitzio.New(blitzio.Config{Workers: benchWorkers})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}

// benchProducer sends 0, 1, 2, ... until the channel is closed by the receiver.
type benchProducer struct {
	f    *SendFuture[int]
	next int
}

func (p *benchProducer) Poll(cx *blitzio.Context) (int, bool) {
	for {
		err, ok := p.f.Poll(cx)
		if !ok {
			return 0, false
		}
		if err != nil {
			return p.next, true // the receiver closed: done
		}
		p.next++
		p.f.Reset(p.next)
	}
}

// benchConsumer receives b.Loop's count of messages, then closes the receiver.
type benchConsumer struct {
	b   *testing.B
	rx  *Receiver[int]
	f   *RecvFuture[int]
	got int
	bad bool
}

func (c *benchConsumer) Poll(cx *blitzio.Context) (int, bool) {
	for {
		// b.Loop is called once per received value, never for a value not yet received.
		if c.f == nil {
			c.f = c.rx.RecvAsync()
		}
		r, ok := c.f.Poll(cx)
		if !ok {
			return 0, false
		}
		if r.Err != nil {
			c.bad = true
			return c.got, true
		}
		c.got++
		if !c.b.Loop() {
			c.rx.Close()
			return c.got, true
		}
	}
}

func benchTasksChan(b *testing.B, producers int) {
	rt := benchRuntime(b)
	tx, rx := NewChannel[int](benchChanCap)
	b.ReportAllocs()
	var hs []blitzio.JoinHandle[int]
	for i := 0; i < producers; i++ {
		t := tx
		if i > 0 {
			t = tx.Clone()
		}
		hs = append(hs, blitzio.Spawn(rt, &benchProducer{f: t.SendAsync(0)}))
	}
	cons := &benchConsumer{b: b, rx: rx}
	// The first value is received before the first b.Loop call (which starts the timer).
	n, err := blitzio.Spawn(rt, cons).Wait()
	if err != nil || cons.bad {
		b.Fatalf("consumer: %v (closed early: %v)", err, cons.bad)
	}
	for _, h := range hs {
		if _, err := h.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	_ = n
}

func benchGoChan(b *testing.B, producers int) {
	ch := make(chan int, benchChanCap)
	var stop atomic.Bool
	var wg sync.WaitGroup
	b.ReportAllocs()
	for i := 0; i < producers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := 0; !stop.Load(); v++ {
				ch <- v
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	<-ch
	for b.Loop() {
		<-ch
	}
	stop.Store(true)
	for {
		select {
		case <-ch:
		case <-done:
			return
		}
	}
}

// BenchmarkChanSPSC: one producer task and one consumer task on a 2-worker runtime
// through a bounded channel of 1024, beside a Go channel of 1024 between two goroutines.
func BenchmarkChanSPSC(b *testing.B) {
	b.Run("tsync", func(b *testing.B) { benchTasksChan(b, 1) })
	b.Run("go-chan", func(b *testing.B) { benchGoChan(b, 1) })
}

// BenchmarkChanMPSC: four producer tasks, one consumer task, bounded channel of 1024;
// beside four goroutines sending on a Go channel of 1024.
func BenchmarkChanMPSC(b *testing.B) {
	b.Run("tsync", func(b *testing.B) { benchTasksChan(b, 4) })
	b.Run("go-chan", func(b *testing.B) { benchGoChan(b, 4) })
}

type benchReq struct {
	v     int
	reply *OneshotSender[int]
}

// benchServer answers requests with v+1 until the request channel closes.
type benchServer struct {
	f *RecvFuture[benchReq]
}

func (s *benchServer) Poll(cx *blitzio.Context) (struct{}, bool) {
	for {
		r, ok := s.f.Poll(cx)
		if !ok {
			return struct{}{}, false
		}
		if r.Err != nil {
			return struct{}{}, true
		}
		r.Value.reply.SendFrom(cx, r.Value.v+1)
	}
}

// benchClient makes one request per b.Loop iteration and awaits the reply.
type benchClient struct {
	b       *testing.B
	tx      *Sender[benchReq]
	send    *SendFuture[benchReq] // non-nil while a send is in progress
	sendF   *SendFuture[benchReq] // the reused send future
	reply   *OneshotReceiver[int]
	i       int
	started bool
	bad     bool
}

func (c *benchClient) Poll(cx *blitzio.Context) (struct{}, bool) {
	for {
		if c.send != nil {
			err, ok := c.send.Poll(cx)
			if !ok {
				return struct{}{}, false
			}
			if err != nil {
				c.bad = true
			}
			c.send = nil
		}
		if c.reply != nil {
			r, ok := c.reply.Poll(cx)
			if !ok {
				return struct{}{}, false
			}
			if r.Err != nil || r.Value != c.i+1 {
				c.bad = true
			}
			c.reply = nil
		}
		if !c.b.Loop() {
			c.tx.Close()
			return struct{}{}, true
		}
		c.i++
		stx, srx := NewOneshot[int]()
		c.reply = srx
		// The send future is reused; only the oneshot is allocated per request.
		c.send = c.sendFut(benchReq{v: c.i, reply: stx})
	}
}

func (c *benchClient) sendFut(r benchReq) *SendFuture[benchReq] {
	if !c.started {
		c.started = true
		c.sendF = c.tx.SendAsync(r)
		return c.sendF
	}
	c.sendF.Reset(r)
	return c.sendF
}

// BenchmarkOneshotRoundTrip: a client task sends a request carrying a oneshot reply
// sender over a bounded channel to a server task, and awaits the reply; beside a
// goroutine doing the same with a reply channel per request.
func BenchmarkOneshotRoundTrip(b *testing.B) {
	b.Run("tsync", benchOneshotRoundTripOurs)
	b.Run("goroutines+chan", benchOneshotRoundTripBase)
}

func benchOneshotRoundTripOurs(b *testing.B) {
	rt := benchRuntime(b)
	tx, rx := NewChannel[benchReq](benchChanCap)
	b.ReportAllocs()
	srv := blitzio.Spawn(rt, &benchServer{f: rx.RecvAsync()})
	cl := &benchClient{b: b, tx: tx}
	if _, err := blitzio.Spawn(rt, cl).Wait(); err != nil || cl.bad {
		b.Fatalf("client: %v, bad reply: %v", err, cl.bad)
	}
	if _, err := srv.Wait(); err != nil {
		b.Fatal(err)
	}
}

func benchOneshotRoundTripBase(b *testing.B) {
	type req struct {
		v     int
		reply chan int
	}
	reqs := make(chan req, benchChanCap)
	go func() {
		for r := range reqs {
			r.reply <- r.v + 1
		}
	}()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		reply := make(chan int, 1)
		reqs <- req{i, reply}
		if <-reply != i+1 {
			b.Fatal("bad reply")
		}
	}
	close(reqs)
}

const (
	benchBroadcastReceivers = 4
	benchBroadcastBatch     = 256 // the sender waits for every receiver every batch
)

// benchBcastReceiver reads every value (any lag fails the benchmark) and acks each batch.
type benchBcastReceiver struct {
	f    *SourceFuture[int]
	ack  *UnboundedSender[int]
	next int
	bad  bool
}

func (r *benchBcastReceiver) Poll(cx *blitzio.Context) (int, bool) {
	for {
		res, ok := r.f.Poll(cx)
		if !ok {
			return 0, false
		}
		if res.Err != nil {
			r.bad = res.Err != ErrClosed
			return r.next, true
		}
		if res.Value != r.next {
			r.bad = true
		}
		r.next++
		if r.next%benchBroadcastBatch == 0 {
			_ = r.ack.SendFrom(cx, r.next)
		}
	}
}

// benchBcastSender sends one value per b.Loop iteration and waits for the acks of every
// receiver at the end of each batch, so no receiver can lag.
type benchBcastSender struct {
	b     *testing.B
	tx    *BroadcastSender[int]
	acks  *SourceFuture[int]
	i     int
	owing int
}

func (s *benchBcastSender) Poll(cx *blitzio.Context) (struct{}, bool) {
	for {
		for s.owing > 0 {
			if _, ok := s.acks.Poll(cx); !ok {
				return struct{}{}, false
			}
			s.owing--
		}
		if !s.b.Loop() {
			s.tx.Close()
			return struct{}{}, true
		}
		_ = s.tx.SendFrom(cx, s.i)
		s.i++
		if s.i%benchBroadcastBatch == 0 {
			s.owing = benchBroadcastReceivers
		}
	}
}

// BenchmarkBroadcast: one sender task, four receiver tasks, one op per value sent (and
// received by all four); beside a goroutine sending each value to four Go channels read
// by four goroutines.
func BenchmarkBroadcast(b *testing.B) {
	b.Run("tsync", benchBroadcastOurs)
	b.Run("go-chan-fanout", benchBroadcastBase)
}

func benchBroadcastOurs(b *testing.B) {
	rt := benchRuntime(b)
	tx, rx := NewBroadcast[int](benchChanCap)
	ackTx, ackRx := NewUnbounded[int]()
	b.ReportAllocs()
	var rs []*benchBcastReceiver
	var hs []blitzio.JoinHandle[int]
	for i := 0; i < benchBroadcastReceivers; i++ {
		r := &benchBcastReceiver{f: tx.Subscribe().RecvAsync(), ack: ackTx}
		rs = append(rs, r)
		hs = append(hs, blitzio.Spawn(rt, r))
	}
	rx.Close()
	s := &benchBcastSender{b: b, tx: tx, acks: ackRx.RecvAsync()}
	if _, err := blitzio.Spawn(rt, s).Wait(); err != nil {
		b.Fatal(err)
	}
	for i, h := range hs {
		if n, err := h.Wait(); err != nil || rs[i].bad || n != s.i {
			b.Fatalf("receiver %d: %d of %d values, lagged or out of order: %v, %v", i, n, s.i, rs[i].bad, err)
		}
	}
}

func benchBroadcastBase(b *testing.B) {
	var chans []chan int
	var wg sync.WaitGroup
	for i := 0; i < benchBroadcastReceivers; i++ {
		c := make(chan int, benchChanCap)
		chans = append(chans, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range c {
			}
		}()
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		for _, c := range chans {
			c <- i
		}
		i++
	}
	for _, c := range chans {
		close(c)
	}
	wg.Wait()
}

// benchWatchSender sends one value per b.Loop iteration.
type benchWatchSender struct {
	b  *testing.B
	tx *WatchSender[int]
	i  int
}

func (s *benchWatchSender) Poll(cx *blitzio.Context) (struct{}, bool) {
	for s.b.Loop() {
		s.i++
		_ = s.tx.SendFrom(cx, s.i)
		if s.i%64 == 0 {
			cx.Yield() // let the watcher run, as a sender doing other work would
			return struct{}{}, false
		}
	}
	s.tx.Close()
	return struct{}{}, true
}

// benchWatcher waits for changes and reads the latest value in place.
type benchWatcher struct {
	r    *WatchReceiver[int]
	f    *ChangedFuture[int]
	last int
}

func (w *benchWatcher) Poll(cx *blitzio.Context) (int, bool) {
	for {
		err, ok := w.f.Poll(cx)
		if !ok {
			return 0, false
		}
		if err != nil {
			return w.last, true
		}
		w.r.Borrow(func(v *int) { w.last = *v })
	}
}

// BenchmarkWatch: a sender task updates a watch channel once per op while a receiver
// task waits for changes and reads the latest value; beside a mutex-guarded value with a
// coalescing notification channel (capacity 1) between two goroutines, Go's usual form.
func BenchmarkWatch(b *testing.B) {
	b.Run("tsync", benchWatchOurs)
	b.Run("mutex+notify-chan", benchWatchBase)
}

func benchWatchOurs(b *testing.B) {
	rt := benchRuntime(b)
	tx, rx := NewWatch(0)
	b.ReportAllocs()
	hw := blitzio.Spawn(rt, &benchWatcher{r: rx, f: rx.ChangedAsync()})
	s := &benchWatchSender{b: b, tx: tx}
	if _, err := blitzio.Spawn(rt, s).Wait(); err != nil {
		b.Fatal(err)
	}
	if last, err := hw.Wait(); err != nil || last != s.i {
		b.Fatalf("watcher ended at %d, want the latest %d (%v)", last, s.i, err)
	}
}

func benchWatchBase(b *testing.B) {
	var mu sync.Mutex
	val := 0
	notify := make(chan struct{}, 1)
	done := make(chan int)
	go func() {
		last := 0
		for range notify {
			mu.Lock()
			last = val
			mu.Unlock()
		}
		done <- last
	}()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		mu.Lock()
		val = i
		mu.Unlock()
		select {
		case notify <- struct{}{}:
		default:
		}
		if i%64 == 0 {
			runtime.Gosched()
		}
	}
	close(notify)
	if last := <-done; last != i {
		b.Fatalf("watcher ended at %d, want %d", last, i)
	}
}
