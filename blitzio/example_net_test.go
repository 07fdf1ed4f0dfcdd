//go:build linux

package blitzio_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/blitzgo/blitz/blitzio"
	"golang.org/x/sys/unix"
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

// A system call the package does not wrap, made from a task: AsyncIO runs it when the
// socket is ready, and waits again when it would block. Here recvfrom with MSG_PEEK
// looks at a datagram without taking it; the ordinary RecvFrom then takes it.
func ExampleUDPConn_AsyncIO() {
	rt, err := blitzio.New(blitzio.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	c, err := blitzio.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	go func() { // a sender elsewhere
		s, err := net.DialUDP("udp4", nil, c.UDPAddr())
		if err == nil {
			s.Write([]byte("ping"))
			s.Close()
		}
	}()
	out, err := blitzio.BlockOn(rt, blitzio.Async(func(co *blitzio.Co) string {
		buf := make([]byte, 16)
		var n int
		err := blitzio.Await(co, c.AsyncIO(blitzio.InterestRead, func(fd uintptr) error {
			var err error
			n, _, err = unix.Recvfrom(int(fd), buf, unix.MSG_PEEK|unix.MSG_DONTWAIT)
			return err // EAGAIN: wait for the next datagram
		}))
		if err != nil {
			return err.Error()
		}
		peeked := string(buf[:n])
		d, err := blitzio.Await(co, c.RecvFrom(buf)).Get()
		if err != nil {
			return err.Error()
		}
		return peeked + " then " + string(buf[:d.N])
	}))
	fmt.Println(out, err)
	// Output: ping then ping <nil>
}

// A listener made by package net (or inherited: with systemd's socket activation,
// net.FileListener(os.NewFile(3, "")) makes it) served by blitzio tasks.
func ExampleTCPListenerFromNet() {
	rt, err := blitzio.New(blitzio.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	nl, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		panic(err)
	}
	l, err := blitzio.TCPListenerFromNet(nl) // nl is closed; l owns the socket
	if err != nil {
		panic(err)
	}
	defer l.Close()
	go func() { // a client of package net
		if c, err := net.Dial("tcp4", l.Addr().String()); err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	got, err := blitzio.BlockOn(rt, blitzio.Async(func(co *blitzio.Co) string {
		a, err := blitzio.Await(co, l.Accept()).Get()
		if err != nil {
			return err.Error()
		}
		defer a.Conn.Close()
		buf := make([]byte, 2)
		if _, err := blitzio.Await(co, a.Conn.ReadFull(buf)).Get(); err != nil {
			return err.Error()
		}
		return string(buf)
	}))
	fmt.Println(got, err)
	// Output: hi <nil>
}

// A dial with options, as with net.Dialer: a time bound for the whole dial, and a
// Control function that sets a socket option before the connect.
func ExampleDialer() {
	rt, err := blitzio.New(blitzio.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	l, err := net.Listen("tcp4", "127.0.0.1:0") // a server of package net
	if err != nil {
		panic(err)
	}
	defer l.Close()
	d := &blitzio.Dialer{
		Timeout: 5 * time.Second,
		Control: func(network, address string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TOS, 0x10) // low delay
			})
			return errors.Join(err, serr)
		},
	}
	r, err := blitzio.BlockOn(rt, d.Dial("tcp", l.Addr().String()))
	if err != nil || r.Err != nil {
		fmt.Println(err, r.Err)
		return
	}
	defer r.Value.Close()
	fmt.Println("connected to the listener:", r.Value.RemoteAddr().String() == l.Addr().String())
	// Output: connected to the listener: true
}

// A Dialer dials UDP by "host:port" too, resolving the name on the runtime's blocking
// pool (DialUDP), as net.Dial("udp", ...) does.
func ExampleDialer_DialUDP() {
	rt, err := blitzio.New(blitzio.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0") // an echo server of package net
	if err != nil {
		panic(err)
	}
	defer pc.Close()
	go func() {
		b := make([]byte, 64)
		n, from, err := pc.ReadFrom(b)
		if err == nil {
			pc.WriteTo(b[:n], from)
		}
	}()
	_, port, _ := net.SplitHostPort(pc.LocalAddr().String())
	var d blitzio.Dialer
	reply, err := blitzio.BlockOn(rt, blitzio.Async(func(co *blitzio.Co) string {
		r := blitzio.Await(co, d.DialUDP(context.Background(), "udp4", "localhost:"+port))
		if r.Err != nil {
			return r.Err.Error()
		}
		c := r.Value
		defer c.Close()
		if s := blitzio.Await(co, c.Send([]byte("ping"))); s.Err != nil {
			return s.Err.Error()
		}
		b := make([]byte, 64)
		n := blitzio.Await(co, c.Recv(b))
		if n.Err != nil {
			return n.Err.Error()
		}
		return string(b[:n.Value])
	}))
	fmt.Println(reply, err)
	// Output: ping <nil>
}
