package tsync_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/tsync"
)

// A producer task and a consumer task exchange values through a bounded channel. The
// producer closes its sender when done; the consumer drains what was sent and then sees
// ErrClosed.
func ExampleNewChannel() {
	rt, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	tx, rx := tsync.NewChannel[int](4)
	producer := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) struct{} {
		defer tx.Close()
		for i := 1; i <= 10; i++ {
			if err := blitzio.Await(co, blitzio.Future[error](tx.SendAsync(i))); err != nil {
				return struct{}{} // the receivers are gone
			}
		}
		return struct{}{}
	}))
	consumer := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) int {
		defer rx.Close()
		recv := rx.RecvAsync() // one future, reused for every value
		sum := 0
		for {
			r := blitzio.Await(co, blitzio.Future[blitzio.Result[int]](recv))
			if errors.Is(r.Err, tsync.ErrClosed) {
				return sum
			}
			sum += r.Value
		}
	}))
	_, _ = producer.Wait()
	sum, _ := consumer.Wait()
	fmt.Println("sum:", sum)
	// Output: sum: 55
}

// The blocking forms join a task world and a goroutine world: here a plain goroutine
// sends, and ranges over the channel like a Go channel.
func ExampleReceiver_All() {
	tx, rx := tsync.NewChannel[string](2)
	go func() {
		defer tx.Close()
		for _, w := range []string{"a", "b", "c"} {
			_ = tx.Send(w) // blocks while the channel is full
		}
	}()
	for w := range rx.All() {
		fmt.Print(w, " ")
	}
	fmt.Println()
	// Output: a b c
}

// A send on a channel whose receivers are all closed gives the value back.
func ExampleSendError() {
	tx, rx := tsync.NewChannel[string](1)
	rx.Close()
	err := tx.Send("lost?")
	var se *tsync.SendError[string]
	if errors.As(err, &se) && errors.Is(err, tsync.ErrClosed) {
		fmt.Println("not sent, got back:", se.Value)
	}
	// Output: not sent, got back: lost?
}

// Request and reply: the request carries the sending half of a oneshot channel, and the
// client awaits the receiving half, which is itself a future.
func ExampleNewOneshot() {
	rt, err := blitzio.New(blitzio.Config{Workers: 1})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	type request struct {
		n     int
		reply *tsync.OneshotSender[int]
	}
	reqs, inbox := tsync.NewUnbounded[request]()
	server := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) struct{} {
		for {
			r := blitzio.Await(co, blitzio.Future[blitzio.Result[request]](inbox.RecvAsync()))
			if r.Err != nil {
				return struct{}{}
			}
			_ = r.Value.reply.Send(r.Value.n * r.Value.n)
		}
	}))
	replyTx, replyRx := tsync.NewOneshot[int]()
	_ = reqs.Send(request{n: 7, reply: replyTx})
	res, _ := blitzio.BlockOn(rt, blitzio.Future[blitzio.Result[int]](replyRx))
	fmt.Println(res.Value)
	reqs.Close()
	_, _ = server.Wait()
	// Output: 49
}

// Every receiver of a broadcast channel sees every value; one that falls behind by more
// than the capacity is told how many values it missed.
func ExampleNewBroadcast() {
	tx, rx1 := tsync.NewBroadcast[int](2)
	rx2 := tx.Subscribe()
	for i := 1; i <= 3; i++ {
		_ = tx.Send(i)
	}
	tx.Close()
	var got []int
	for v := range rx1.All() { // All skips the lag
		got = append(got, v)
	}
	fmt.Println(got)
	_, err := rx2.Recv()
	var lag *tsync.LagError
	if errors.As(err, &lag) {
		fmt.Println("missed", lag.Missed)
	}
	v, _ := rx2.Recv()
	fmt.Println("then", v)
	// Output:
	// [2 3]
	// missed 1
	// then 2
}

// A watch channel holds the latest value; receivers wait for changes and read the value
// in place.
func ExampleNewWatch() {
	type config struct{ Level string }
	tx, rx := tsync.NewWatch(config{Level: "info"})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for rx.Changed() == nil {
			rx.Borrow(func(c *config) { fmt.Println("level:", c.Level) })
		}
	}()
	_ = tx.Send(config{Level: "debug"})
	tx.Close() // Changed reports the last change first, then ErrClosed
	<-done
	// Output: level: debug
}

// RecvAny waits on several receivers at once, like Go's select over receive cases.
func ExampleRecvAny() {
	numbers, numRx := tsync.NewChannel[string](1)
	words, wordRx := tsync.NewUnbounded[string]()
	_ = words.Send("hello")
	numbers.Close()
	words.Close()

	srcs := []tsync.Source[string]{numRx, wordRx}
	for live := len(srcs); live > 0; {
		// In a task, await tsync.RecvAny(srcs...) instead.
		got, _ := tsync.RecvAnyContext(context.Background(), srcs...)
		if got.Err != nil {
			srcs[got.Index] = nil // closed: stop waiting on it, as with a nil Go channel
			live--
			continue
		}
		fmt.Println(got.Index, got.Value)
	}
	// Output: 1 hello
}
