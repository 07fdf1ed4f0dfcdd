//go:build linux

package blitzio_test

import (
	"fmt"
	"net"

	"github.com/blitzgo/blitz/blitzio"
)

// A TCP echo server and a client on one runtime: one import besides net for the
// addresses.
func ExampleListenTCP() {
	rt, err := blitzio.New(blitzio.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	l, err := blitzio.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		panic(err)
	}
	defer l.Close()

	// The server: a task per connection, echoing until the client closes.
	blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) struct{} {
		for {
			a, err := blitzio.Await(co, l.Accept()).Get()
			if err != nil {
				return struct{}{} // the listener was closed
			}
			blitzio.Spawn(co, blitzio.Async(func(co *blitzio.Co) struct{} {
				defer a.Conn.Close()
				buf := make([]byte, 1024)
				for {
					n, err := blitzio.Await(co, a.Conn.Read(buf)).Get()
					if err != nil {
						return struct{}{}
					}
					blitzio.Await(co, a.Conn.WriteAll(buf[:n]))
				}
			}))
		}
	}))

	// The client.
	reply, err := blitzio.BlockOn(rt, blitzio.Async(func(co *blitzio.Co) string {
		c, err := blitzio.Await(co, blitzio.DialTCP("tcp4", nil, l.TCPAddr())).Get()
		if err != nil {
			return err.Error()
		}
		defer c.Close()
		blitzio.Await(co, c.WriteAll([]byte("hello")))
		buf := make([]byte, 5)
		if _, err := blitzio.Await(co, c.ReadFull(buf)).Get(); err != nil {
			return err.Error()
		}
		return string(buf)
	}))
	fmt.Println(reply, err)
	// Output: hello <nil>
}
