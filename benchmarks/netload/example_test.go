package netload_test

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/blitzgo/blitz/benchmarks/netload"
)

// An echo load: 10 connections, 20 round trips of 128 bytes each, every echo checked.
func ExampleEchoClient() {
	srv := netload.NetEcho()
	addr, stop, err := srv.Start("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer stop()
	c, err := netload.DialEcho(context.Background(), addr, netload.EchoConfig{Conns: 10, Size: 128})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	r, err := c.Run(context.Background(), 20)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Ops, "round trips,", r.Bytes, "bytes echoed")
	// Output: 200 round trips, 25600 bytes echoed
}

// A pipelined HTTP load: 4 keep-alive connections, 16 requests per write, responses
// checked in order (a 200 and a 404 alternate).
func ExampleHTTPClient() {
	addr, stop, err := netload.FastHTTP().Start("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer stop()
	c, err := netload.DialHTTP(context.Background(), addr, netload.HTTPConfig{
		Conns:    4,
		Pipeline: 16,
		Requests: []netload.HTTPRequest{netload.Plaintext, {Path: "/nope", Status: 404}},
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	r, err := c.Run(context.Background(), 64)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Ops, "responses")
	// Output: 256 responses
}

// ReadResponse parses one response off a stream, here a chunked one.
func ExampleReadResponse() {
	in := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7\r\nHello, \r\n6\r\nWorld!\r\n0\r\n\r\n"
	status, body, err := netload.ReadResponse(bufio.NewReader(strings.NewReader(in)), nil)
	fmt.Println(status, string(body), err)
	// Output: 200 Hello, World! <nil>
}

// Connections opened, served and closed.
func ExampleConnect() {
	addr, stop, err := netload.NetEcho().Start("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer stop()
	r, err := netload.Connect(context.Background(), addr, netload.ConnectConfig{Workers: 4}, 100)
	fmt.Println(r.Ops, "connections served,", err)
	// Output: 100 connections served, <nil>
}

// UDP datagrams echoed by 2 sockets.
func ExampleUDPClient() {
	addr, stop, err := netload.NetUDPEcho().Start("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer stop()
	c, err := netload.DialUDP(context.Background(), addr, netload.UDPConfig{Sockets: 2, Size: 64})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	r, err := c.Run(context.Background(), 50)
	fmt.Println(r.Ops, "datagrams echoed,", err)
	// Output: 100 datagrams echoed, <nil>
}

// The memory a server spends per idle connection: a child process (this program run
// again, which is why TestMain calls RunHolderIfChild) holds the connections.
func ExampleIdleConnMemory() {
	m, err := netload.IdleConnMemory(context.Background(), netload.NetEcho(), netload.HoldConfig{Conns: 100, Mode: netload.HoldEcho})
	if err != nil {
		panic(err)
	}
	// m.PerConn() is the figure (bytes of heap and stack per connection); it is not
	// printed here, since a measurement varies from run to run.
	fmt.Println(m.Conns, "connections held")
	// Output: 100 connections held
}
