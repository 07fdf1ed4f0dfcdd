package blitzio_test

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// fetch is a stand-in for a request that fails in the ways real ones do: the first
// attempt gets an error, the second never answers, the third succeeds.
func fetch(attempt int) blitzio.Future[blitzio.Result[string]] {
	switch attempt {
	case 1:
		return blitzio.Ready(blitzio.Result[string]{Err: errors.New("connection reset")})
	case 2:
		return blitzio.Pending[blitzio.Result[string]]()
	}
	return blitzio.Ready(blitzio.Result[string]{Value: fmt.Sprintf("payload (attempt %d)", attempt)})
}

// A retry with a timeout per attempt and exponential backoff, written as a plain loop.
// Aborting the task at any point (an Await) unwinds the function: the pending request
// or sleep is dropped, no WithDrop needed.
func ExampleAsync_retry() {
	rt, _ := blitzio.New(blitzio.Config{Workers: 1})
	defer rt.Close()

	retry := blitzio.Async(func(co *blitzio.Co) blitzio.Result[string] {
		backoff := time.Millisecond
		for attempt := 1; ; attempt++ {
			r := blitzio.Await(co, blitzio.Timeout(20*time.Millisecond, fetch(attempt)))
			if err := cmp.Or(r.Err, r.Value.Err); err == nil || attempt == 5 {
				return blitzio.Result[string]{Value: r.Value.Value, Err: err}
			}
			blitzio.Await(co, blitzio.Sleep(backoff))
			backoff *= 2
		}
	})

	r, _ := blitzio.Spawn(rt, retry).Wait()
	fmt.Println(r.Value, r.Err)
	// Output: payload (attempt 3) <nil>
}

// The same retry without a coroutine: Loop over the attempt number, each iteration a
// composed future (no goroutine per task, a few hundred bytes while waiting).
func ExampleLoop_retry() {
	rt, _ := blitzio.New(blitzio.Config{Workers: 1})
	defer rt.Close()

	type state struct{ attempt int }
	type step = blitzio.Step[state, blitzio.Result[string]]
	retry := blitzio.Loop(state{1}, func(s state) blitzio.Future[step] {
		try := blitzio.Timeout(20*time.Millisecond, fetch(s.attempt))
		return blitzio.AndThen(try, func(r blitzio.Result[blitzio.Result[string]]) blitzio.Future[step] {
			if err := cmp.Or(r.Err, r.Value.Err); err == nil || s.attempt == 5 {
				return blitzio.Ready(blitzio.Break[state](blitzio.Result[string]{Value: r.Value.Value, Err: err}))
			}
			backoff := time.Millisecond << (s.attempt - 1)
			return blitzio.Map(blitzio.Sleep(backoff), func(struct{}) step { return blitzio.Continue[blitzio.Result[string]](state{s.attempt + 1}) })
		})
	})

	r, _ := blitzio.Spawn(rt, retry).Wait()
	fmt.Println(r.Value, r.Err)
	// Output: payload (attempt 3) <nil>
}

// getUser is a stand-in for a request: it answers after a short sleep.
func getUser(id int) blitzio.Future[blitzio.Result[string]] {
	return blitzio.Map(blitzio.Sleep(time.Duration(id%3)*time.Millisecond), func(struct{}) blitzio.Result[string] {
		if id == 4 {
			return blitzio.Result[string]{Err: fmt.Errorf("user %d: not found", id)}
		}
		return blitzio.Result[string]{Value: fmt.Sprintf("user-%d", id)}
	})
}

// Fan-out of N requests, at most 3 in flight, and fan-in of the results in input order.
func ExampleMapLimit() {
	rt, _ := blitzio.New(blitzio.Config{Workers: 2})
	defer rt.Close()

	ids := []int{1, 2, 3, 4, 5, 6}
	results, _ := blitzio.BlockOn(rt, blitzio.MapLimit(ids, 3, getUser))
	for _, r := range results {
		fmt.Println(r.Value, r.Err)
	}
	// Output:
	// user-1 <nil>
	// user-2 <nil>
	// user-3 <nil>
	//  user 4: not found
	// user-5 <nil>
	// user-6 <nil>
}

// memConn is an in-memory stand-in for a network connection (blitzio has no network I/O
// yet): another goroutine writes lines into it, and ReadLine is a future that is ready
// when a line (or the end of input) is there.
type memConn struct {
	mu     sync.Mutex
	in     []string
	closed bool
	waker  blitzio.Waker
	out    []string
}

func (c *memConn) feed(lines ...string) {
	c.mu.Lock()
	c.in = append(c.in, lines...)
	w := c.waker
	c.mu.Unlock()
	w.Wake()
}

func (c *memConn) closeInput() {
	c.mu.Lock()
	c.closed = true
	w := c.waker
	c.mu.Unlock()
	w.Wake()
}

// ReadLine returns the next line, or io.EOF once the input is closed and drained.
func (c *memConn) ReadLine() blitzio.Future[blitzio.Result[string]] {
	return blitzio.PollFn(func(cx *blitzio.Context) (blitzio.Result[string], bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		switch {
		case len(c.in) > 0:
			line := c.in[0]
			c.in = c.in[1:]
			return blitzio.Result[string]{Value: line}, true
		case c.closed:
			return blitzio.Result[string]{Err: io.EOF}, true
		}
		c.waker = cx.Waker()
		return blitzio.Result[string]{}, false
	})
}

func (c *memConn) WriteLine(s string) { c.mu.Lock(); c.out = append(c.out, s); c.mu.Unlock() }

// A line-protocol handler that reads as a loop: read a line, answer it, until QUIT or
// the end of input.
func ExampleAsync_lineProtocol() {
	rt, _ := blitzio.New(blitzio.Config{Workers: 1})
	defer rt.Close()
	conn := &memConn{}

	handler := blitzio.Async(func(co *blitzio.Co) error {
		for {
			line := blitzio.Await(co, conn.ReadLine())
			if line.Err != nil {
				return line.Err
			}
			switch cmd, arg, _ := strings.Cut(line.Value, " "); cmd {
			case "PING":
				conn.WriteLine("PONG")
			case "ECHO":
				conn.WriteLine(arg)
			case "QUIT":
				conn.WriteLine("BYE")
				return nil
			default:
				conn.WriteLine("ERR unknown command " + cmd)
			}
		}
	})

	h := blitzio.Spawn(rt, handler)
	go func() {
		conn.feed("PING", "ECHO hello world")
		time.Sleep(time.Millisecond) // the handler waits for more input meanwhile
		conn.feed("FROB", "QUIT", "PING")
		conn.closeInput()
	}()
	err, _ := h.Wait()
	fmt.Println(strings.Join(conn.out, " | "), err)
	// Output: PONG | hello world | ERR unknown command FROB | BYE <nil>
}

// A task hands work to a plain goroutine (or a CPU pool, a callback API) and awaits the
// answer without blocking its worker: a Completion is a future completed by any
// goroutine.
func ExampleNewCompletion() {
	rt, _ := blitzio.New(blitzio.Config{Workers: 1})
	defer rt.Close()

	task := blitzio.Async(func(co *blitzio.Co) int {
		done, result := blitzio.NewCompletion[int]()
		go func() {
			sum := 0
			for i := 1; i <= 1000; i++ {
				sum += i
			}
			done.Complete(sum)
		}()
		return blitzio.Await(co, result) // the worker runs other tasks meanwhile
	})
	fmt.Println(blitzio.Spawn(rt, task).Wait())
	// Output: 500500 <nil>
}
