//go:build linux

package blitzio

import (
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// echoTask is a hand-written echo loop over the poll methods: no allocation per
// message, the form a performance-minded server takes.
type echoTask struct {
	c       *TCPStream
	buf     []byte
	n, off  int
	writing bool
}

func (e *echoTask) Poll(cx *Context) (struct{}, bool) {
	for {
		if !e.writing {
			r, ok := e.c.PollRead(cx, e.buf)
			if !ok {
				return struct{}{}, false
			}
			if r.Err != nil {
				e.c.Close()
				return struct{}{}, true
			}
			e.n, e.off, e.writing = r.Value, 0, true
		}
		for e.off < e.n {
			r, ok := e.c.PollWrite(cx, e.buf[e.off:e.n])
			if !ok {
				return struct{}{}, false
			}
			if r.Err != nil {
				e.c.Close()
				return struct{}{}, true
			}
			e.off += r.Value
		}
		e.writing = false
	}
}

// benchServer is a server under test: its address and a stop function.
type benchServer struct {
	addr string
	stop func()
}

func startBlitzioEcho(b *testing.B, backend Backend, msg int) benchServer {
	rt, err := New(Config{Backend: backend})
	if err != nil {
		b.Skip(err)
	}
	l, err := ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	Spawn(rt, Async(func(co *Co) struct{} {
		for {
			a := Await(co, l.Accept())
			if a.Err != nil {
				return struct{}{}
			}
			Spawn(co, &echoTask{c: a.Value.Conn, buf: make([]byte, max(msg, 4096))})
		}
	}))
	return benchServer{addr: l.Addr().String(), stop: func() { l.Close(); rt.Close() }}
}

func startNetEcho(b *testing.B, msg int) benchServer {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, max(msg, 4096))
				for {
					n, err := c.Read(buf)
					if err != nil {
						c.Close()
						return
					}
					if _, err := c.Write(buf[:n]); err != nil {
						c.Close()
						return
					}
				}
			}()
		}
	}()
	return benchServer{addr: l.Addr().String(), stop: func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}}
}

// runEchoClients measures round trips of msg bytes over conns connections, the same
// client (goroutines with Go's net) for every server: one op is one round trip.
func runEchoClients(b *testing.B, srv benchServer, conns, msg int) {
	defer srv.stop()
	pool := make(chan net.Conn, conns)
	for range conns {
		c, err := net.Dial("tcp4", srv.addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		pool <- c
	}
	par := (conns + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0)
	b.SetParallelism(par)
	b.SetBytes(int64(msg))
	b.ReportAllocs()
	var failed atomic.Value
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := <-pool
		defer func() { pool <- c }()
		out := make([]byte, msg)
		in := make([]byte, msg)
		for pb.Next() {
			if _, err := c.Write(out); err != nil {
				failed.Store(err)
				return
			}
			if _, err := io.ReadFull(c, in); err != nil {
				failed.Store(err)
				return
			}
		}
	})
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkEcho compares echo throughput of a blitzio server (per backend) with a
// goroutine-per-connection net server, in the same run, with the same client.
func BenchmarkEcho(b *testing.B) {
	for _, conns := range []int{100, 1000} {
		for _, msg := range []int{128, 4096} {
			name := fmt.Sprintf("conns=%d/msg=%d", conns, msg)
			for _, be := range netBackends {
				b.Run("blitzio-"+be.String()+"/"+name, func(b *testing.B) {
					runEchoClients(b, startBlitzioEcho(b, be, msg), conns, msg)
				})
			}
			b.Run("net/"+name, func(b *testing.B) {
				runEchoClients(b, startNetEcho(b, msg), conns, msg)
			})
		}
	}
}

// BenchmarkAcceptConnect measures connections accepted per second: each op is a
// connect by a Go net client, an accept and close by the server under test, and the
// client seeing end of stream (then resetting, to leave no TIME_WAIT behind).
func BenchmarkAcceptConnect(b *testing.B) {
	client := func(b *testing.B, addr string) {
		b.ReportAllocs()
		one := make([]byte, 1)
		for b.Loop() {
			c, err := net.Dial("tcp4", addr)
			if err != nil {
				b.Fatal(err)
			}
			c.Read(one)
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}
	for _, be := range netBackends {
		b.Run("blitzio-"+be.String(), func(b *testing.B) {
			rt, err := New(Config{Backend: be})
			if err != nil {
				b.Skip(err)
			}
			defer rt.Close()
			l, err := ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			Spawn(rt, PollFn(func(cx *Context) (struct{}, bool) {
				for {
					r, ok := l.PollAccept(cx)
					if !ok {
						return struct{}{}, false
					}
					if r.Err != nil {
						return struct{}{}, true
					}
					r.Value.Conn.Close()
				}
			}))
			client(b, l.Addr().String())
		})
	}
	b.Run("net", func(b *testing.B) {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		client(b, l.Addr().String())
	})
}

// udpEchoTask echoes datagrams with the AddrPort poll forms: nothing allocated per
// datagram.
type udpEchoTask struct {
	c       *UDPConn
	buf     []byte
	pending AddrPortDatagram
	sending bool
}

func (u *udpEchoTask) Poll(cx *Context) (struct{}, bool) {
	for {
		if !u.sending {
			r, ok := u.c.PollRecvFromAddrPort(cx, u.buf)
			if !ok {
				return struct{}{}, false
			}
			if r.Err != nil {
				return struct{}{}, true
			}
			u.pending, u.sending = r.Value, true
		}
		r, ok := u.c.PollSendToAddrPort(cx, u.buf[:u.pending.N], u.pending.From)
		if !ok {
			return struct{}{}, false
		}
		u.sending = false
		if r.Err != nil && errors.Is(r.Err, net.ErrClosed) {
			return struct{}{}, true
		}
	}
}

// BenchmarkUDP measures datagram round trips (64 B) through an echo server: a blitzio
// UDP socket beside a net.UDPConn served by one goroutine, with the same clients (one
// connected net.UDPConn per client goroutine, 8 of them).
func BenchmarkUDP(b *testing.B) {
	run := func(b *testing.B, addr string) {
		const clients = 8
		pool := make(chan *net.UDPConn, clients)
		for range clients {
			c, err := net.Dial("udp4", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			pool <- c.(*net.UDPConn)
		}
		b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.ReportAllocs()
		var failed atomic.Value
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			c := <-pool
			defer func() { pool <- c }()
			out, in := make([]byte, 64), make([]byte, 64)
			for pb.Next() {
				if _, err := c.Write(out); err != nil {
					failed.Store(err)
					return
				}
				if _, err := c.Read(in); err != nil {
					failed.Store(err)
					return
				}
			}
		})
		if err := failed.Load(); err != nil {
			b.Fatal(err)
		}
	}
	for _, be := range netBackends {
		b.Run("blitzio-"+be.String(), func(b *testing.B) {
			rt, err := New(Config{Backend: be})
			if err != nil {
				b.Skip(err)
			}
			defer rt.Close()
			c, err := ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			Spawn(rt, &udpEchoTask{c: c, buf: make([]byte, 2048)})
			run(b, c.LocalAddr().String())
		})
	}
	b.Run("net", func(b *testing.B) {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		go func() {
			buf := make([]byte, 2048)
			for {
				n, from, err := c.ReadFromUDP(buf)
				if err != nil {
					return
				}
				c.WriteToUDP(buf[:n], from)
			}
		}()
		run(b, c.LocalAddr().String())
	})
}
