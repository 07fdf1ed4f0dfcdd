//go:build linux || darwin || freebsd

// Command echo is a TCP echo server on blitzio, one task per connection written as a
// plain sequential function (blitzio.Async), with a graceful stop: on SIGINT or SIGTERM
// it stops accepting, lets the connections in flight finish for up to -grace, closes the
// rest, and exits 0.
//
//	go run ./examples/echo -addr 127.0.0.1:7000
//	nc 127.0.0.1 7000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"time"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/examples/internal/acceptloop"
	"github.com/blitzgo/blitz/blitzio/stream"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7000", "address to listen on (host:port; port 0 picks a free one)")
	grace := flag.Duration("grace", 10*time.Second, "how long connections in flight may finish after SIGINT/SIGTERM")
	flag.Parse()
	if err := run(*addr, *grace); err != nil {
		log.Fatal(err)
	}
}

func run(addr string, grace time.Duration) error {
	rt, err := blitzio.New(blitzio.Config{})
	if err != nil {
		return err
	}
	stop := blitzio.NewShutdown()
	if err := stop.TriggerOn(blitzio.SignalInterrupt, blitzio.SignalTerminate); err != nil {
		return err
	}
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return err
	}
	l, err := blitzio.ListenTCP("tcp", ta)
	if err != nil {
		return err
	}
	backend, _ := rt.Backend()
	fmt.Printf("echo: listening on %s (%v)\n", l.Addr(), backend)

	accepting := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) error {
		defer l.Close()
		// Accept or stop, whichever comes first; an accept error is logged and retried
		// after a back-off (5 ms up to 1 s), as net/http does, rather than ending the
		// server.
		return acceptloop.Run(co, l, acceptloop.Config{
			Stop: stop.Done,
			Logf: func(format string, args ...any) { log.Printf("echo: "+format, args...) },
			Handle: func(co *blitzio.Co, a blitzio.Accepted) bool {
				guard, err := stop.Guard()
				if err != nil { // the shutdown began meanwhile: refuse the connection
					a.Conn.Close()
					return false
				}
				blitzio.Spawn(co, serve(a.Conn, guard))
				return true
			},
		})
	}))

	// Wait for the signal, then for the connections in flight (up to grace); then the
	// runtime's Shutdown closes whatever is left.
	stop.OnShutdown(func(ctx context.Context) error {
		if r, err := accepting.Wait(); err != nil || r != nil {
			return errors.Join(err, r)
		}
		return nil
	})
	stop.OnShutdown(rt.Shutdown)
	<-stop.Context().Done()
	fmt.Println("echo: stopping: no new connections; waiting for", stop.InFlight(), "in flight")
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := stop.Wait(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "echo: stopped with work cut short:", err)
	} else {
		fmt.Println("echo: stopped cleanly")
	}
	return nil
}

// serve echoes one connection until the client closes it. The guard tells the shutdown
// this connection is in flight.
func serve(conn *blitzio.TCPStream, guard *blitzio.WorkGuard) blitzio.Future[struct{}] {
	return blitzio.Async(func(co *blitzio.Co) struct{} {
		defer guard.Release()
		defer conn.Close()
		blitzio.Await(co, stream.Copy(conn, conn))
		return struct{}{}
	})
}
