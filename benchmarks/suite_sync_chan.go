package benchmarks

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/tsync"
)

// The channel cases of suite "sync": tsync's channels between tasks of a 2-worker
// runtime, each beside the Go channel program that does the same work. One op is one
// message (one round trip for OneshotRoundTrip); the side that runs b.Loop is the
// receiver, so the timed part ends when the last counted message is received. The
// bodies mirror blitzio/tsync/bench_chan_test.go (benchmarks in _test.go files cannot be
// imported from here).

// syncChanCases returns the channel cases; suite "sync" appends them to its own.
func syncChanCases() []Case {
	return []Case{
		{
			Name:      "ChanSPSC",
			Note:      "bounded(1024), one producer task, one consumer task; Go chan between two goroutines (measured before: Go 42 ns/msg, Tokio mpsc 111 ns/msg)",
			Ours:      Impl{"tsync", func(b *testing.B) { schTasksChan(b, 1) }},
			Baselines: []Impl{{"go-chan", func(b *testing.B) { schGoChan(b, 1) }}},
			Targets:   []Target{AtMost(40), TimesBetter("go-chan", 1), AllocsAtMost(0)},
		},
		{
			Name:      "ChanMPSC",
			Note:      "bounded(1024), four producer tasks, one consumer task; four goroutines on a Go chan",
			Ours:      Impl{"tsync", func(b *testing.B) { schTasksChan(b, 4) }},
			Baselines: []Impl{{"go-chan", func(b *testing.B) { schGoChan(b, 4) }}},
			Targets:   []Target{TimesBetter("go-chan", 1), AllocsAtMost(0)},
		},
		{
			Name:      "OneshotRoundTrip",
			Note:      "request over a bounded channel carrying a oneshot reply sender, reply awaited; goroutines with a reply chan per request (measured before: Tokio 311 ns, goroutines 402 ns)",
			Ours:      Impl{"tsync", schOneshotRoundTripOurs},
			Baselines: []Impl{{"goroutines+chan", schOneshotRoundTripBase}},
			Targets:   []Target{AtMost(250), TimesBetter("goroutines+chan", 1.5)},
		},
		{
			Name:      "Broadcast",
			Note:      "one sender task, four receiver tasks, every value to all four (acked every 256, so none lags); a goroutine sending to four Go chans",
			Ours:      Impl{"tsync", schBroadcastOurs},
			Baselines: []Impl{{"go-chan-fanout", schBroadcastBase}},
			Targets:   []Target{AllocsAtMost(0)},
		},
		{
			Name:      "Watch",
			Note:      "a sender task updates a watch once per op, a receiver task awaits changes and reads in place; a mutex-guarded value with a coalescing notify chan",
			Ours:      Impl{"tsync", schWatchOurs},
			Baselines: []Impl{{"mutex+notify-chan", schWatchBase}},
			Targets:   []Target{AllocsAtMost(0)},
		},
	}
}

const schChanCap = 1024

var schWorkers = 2

func schRuntime(b *testing.B) *blitzio.Runtime {
	rt, err := blitzio.New(blitzio.Config{Workers: schWorkers})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}

// schProducer sends 0, 1, 2, ... until the channel is closed by the receiver.
type schProducer struct {
	f    *tsync.SendFuture[int]
	next int
}

func (p *schProducer) Poll(cx *blitzio.Context) (int, bool) {
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

// schConsumer receives b.Loop's count of messages, then closes the receiver.
type schConsumer struct {
	b   *testing.B
	rx  *tsync.Receiver[int]
	f   *tsync.RecvFuture[int]
	got int
	bad bool
}

func (c *schConsumer) Poll(cx *blitzio.Context) (int, bool) {
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

func schTasksChan(b *testing.B, producers int) {
	rt := schRuntime(b)
	tx, rx := tsync.NewChannel[int](schChanCap)
	b.ReportAllocs()
	var hs []blitzio.JoinHandle[int]
	for i := 0; i < producers; i++ {
		t := tx
		if i > 0 {
			t = tx.Clone()
		}
		hs = append(hs, blitzio.Spawn(rt, &schProducer{f: t.SendAsync(0)}))
	}
	cons := &schConsumer{b: b, rx: rx}
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

func schGoChan(b *testing.B, producers int) {
	ch := make(chan int, schChanCap)
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

type schReq struct {
	v     int
	reply *tsync.OneshotSender[int]
}

// schServer answers requests with v+1 until the request channel closes.
type schServer struct {
	f *tsync.RecvFuture[schReq]
}

func (s *schServer) Poll(cx *blitzio.Context) (struct{}, bool) {
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

// schClient makes one request per b.Loop iteration and awaits the reply.
type schClient struct {
	b       *testing.B
	tx      *tsync.Sender[schReq]
	send    *tsync.SendFuture[schReq] // non-nil while a send is in progress
	sendF   *tsync.SendFuture[schReq] // the reused send future
	reply   *tsync.OneshotReceiver[int]
	i       int
	started bool
	bad     bool
}

func (c *schClient) Poll(cx *blitzio.Context) (struct{}, bool) {
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
		stx, srx := tsync.NewOneshot[int]()
		c.reply = srx
		// The send future is reused; only the oneshot is allocated per request.
		c.send = c.sendFut(schReq{v: c.i, reply: stx})
	}
}

func (c *schClient) sendFut(r schReq) *tsync.SendFuture[schReq] {
	if !c.started {
		c.started = true
		c.sendF = c.tx.SendAsync(r)
		return c.sendF
	}
	c.sendF.Reset(r)
	return c.sendF
}

func schOneshotRoundTripOurs(b *testing.B) {
	rt := schRuntime(b)
	tx, rx := tsync.NewChannel[schReq](schChanCap)
	b.ReportAllocs()
	srv := blitzio.Spawn(rt, &schServer{f: rx.RecvAsync()})
	cl := &schClient{b: b, tx: tx}
	if _, err := blitzio.Spawn(rt, cl).Wait(); err != nil || cl.bad {
		b.Fatalf("client: %v, bad reply: %v", err, cl.bad)
	}
	if _, err := srv.Wait(); err != nil {
		b.Fatal(err)
	}
}

func schOneshotRoundTripBase(b *testing.B) {
	type req struct {
		v     int
		reply chan int
	}
	reqs := make(chan req, schChanCap)
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
	schBroadcastReceivers = 4
	schBroadcastBatch     = 256 // the sender waits for every receiver every batch
)

// schBcastReceiver reads every value (any lag fails the benchmark) and acks each batch.
type schBcastReceiver struct {
	f    *tsync.SourceFuture[int]
	ack  *tsync.UnboundedSender[int]
	next int
	bad  bool
}

func (r *schBcastReceiver) Poll(cx *blitzio.Context) (int, bool) {
	for {
		res, ok := r.f.Poll(cx)
		if !ok {
			return 0, false
		}
		if res.Err != nil {
			r.bad = res.Err != tsync.ErrClosed
			return r.next, true
		}
		if res.Value != r.next {
			r.bad = true
		}
		r.next++
		if r.next%schBroadcastBatch == 0 {
			_ = r.ack.SendFrom(cx, r.next)
		}
	}
}

// schBcastSender sends one value per b.Loop iteration and waits for the acks of every
// receiver at the end of each batch, so no receiver can lag.
type schBcastSender struct {
	b     *testing.B
	tx    *tsync.BroadcastSender[int]
	acks  *tsync.SourceFuture[int]
	i     int
	owing int
}

func (s *schBcastSender) Poll(cx *blitzio.Context) (struct{}, bool) {
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
		if s.i%schBroadcastBatch == 0 {
			s.owing = schBroadcastReceivers
		}
	}
}

func schBroadcastOurs(b *testing.B) {
	rt := schRuntime(b)
	tx, rx := tsync.NewBroadcast[int](schChanCap)
	ackTx, ackRx := tsync.NewUnbounded[int]()
	b.ReportAllocs()
	var rs []*schBcastReceiver
	var hs []blitzio.JoinHandle[int]
	for i := 0; i < schBroadcastReceivers; i++ {
		r := &schBcastReceiver{f: tx.Subscribe().RecvAsync(), ack: ackTx}
		rs = append(rs, r)
		hs = append(hs, blitzio.Spawn(rt, r))
	}
	rx.Close()
	s := &schBcastSender{b: b, tx: tx, acks: ackRx.RecvAsync()}
	if _, err := blitzio.Spawn(rt, s).Wait(); err != nil {
		b.Fatal(err)
	}
	for i, h := range hs {
		if n, err := h.Wait(); err != nil || rs[i].bad || n != s.i {
			b.Fatalf("receiver %d: %d of %d values, lagged or out of order: %v, %v", i, n, s.i, rs[i].bad, err)
		}
	}
}

func schBroadcastBase(b *testing.B) {
	var chans []chan int
	var wg sync.WaitGroup
	for i := 0; i < schBroadcastReceivers; i++ {
		c := make(chan int, schChanCap)
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

// schWatchSender sends one value per b.Loop iteration.
type schWatchSender struct {
	b  *testing.B
	tx *tsync.WatchSender[int]
	i  int
}

func (s *schWatchSender) Poll(cx *blitzio.Context) (struct{}, bool) {
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

// schWatcher waits for changes and reads the latest value in place.
type schWatcher struct {
	r    *tsync.WatchReceiver[int]
	f    *tsync.ChangedFuture[int]
	last int
}

func (w *schWatcher) Poll(cx *blitzio.Context) (int, bool) {
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

func schWatchOurs(b *testing.B) {
	rt := schRuntime(b)
	tx, rx := tsync.NewWatch(0)
	b.ReportAllocs()
	hw := blitzio.Spawn(rt, &schWatcher{r: rx, f: rx.ChangedAsync()})
	s := &schWatchSender{b: b, tx: tx}
	if _, err := blitzio.Spawn(rt, s).Wait(); err != nil {
		b.Fatal(err)
	}
	if last, err := hw.Wait(); err != nil || last != s.i {
		b.Fatalf("watcher ended at %d, want the latest %d (%v)", last, s.i, err)
	}
}

func schWatchBase(b *testing.B) {
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
