package netload

import (
	"context"
	"testing"
)

// The Bench functions return testing.B bodies: start the server on a free loopback
// port, set the load up outside the timed loop, then make each b.Loop iteration one
// bounded Run of the client, and report the throughput over the timed part. A body
// fails the benchmark (b.Fatal) on any client or server error, including a server
// that fails to stop cleanly.

// batchOps is about how many operations one b.Loop iteration does, split across the
// connections: large enough that starting a Run's goroutines is noise. acceptBatch is
// the connections one AcceptBench iteration opens. Variables so that the test of the
// bodies can run them small.
var (
	batchOps    = 10_000
	acceptBatch = 1_000
)

func perConn(conns int) int { return max(1, batchOps/conns) }

func startServer(b *testing.B, srv Server) string {
	b.Helper()
	if srv.Start == nil {
		b.Fatalf("server %q has no Start function", srv.Name)
	}
	addr, stop, err := srv.Start("127.0.0.1:0")
	if err != nil {
		b.Fatalf("start %s: %v", srv.Name, err)
	}
	b.Cleanup(func() {
		if err := stop(); err != nil {
			b.Errorf("stop %s: %v", srv.Name, err)
		}
	})
	return addr
}

// EchoBench measures srv, an echo server, with conns connections each echoing
// size-byte messages in a closed loop. It reports "msgs/s" (round trips) and "MB/s"
// (payload echoed, one direction).
func EchoBench(srv Server, conns, size int) func(*testing.B) {
	return func(b *testing.B) {
		addr := startServer(b, srv)
		c, err := DialEcho(context.Background(), addr, EchoConfig{Conns: conns, Size: size})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		var total Result
		n := perConn(conns)
		b.ReportAllocs()
		for b.Loop() {
			r, err := c.Run(context.Background(), n)
			if err != nil {
				b.Fatal(err)
			}
			total.add(r)
		}
		reportThroughput(b, total, "msgs/s", true)
	}
}

// HTTPBench measures srv, an HTTP server, with conns keep-alive connections sending
// GET /plaintext with pipeline requests per write. It reports "req/s".
func HTTPBench(srv Server, conns, pipeline int) func(*testing.B) {
	pipeline = max(1, pipeline)
	return func(b *testing.B) {
		addr := startServer(b, srv)
		c, err := DialHTTP(context.Background(), addr, HTTPConfig{Conns: conns, Pipeline: pipeline})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		var total Result
		// A whole number of batches per connection, so every write carries `pipeline`
		// requests.
		n := max(pipeline, perConn(conns)/pipeline*pipeline)
		b.ReportAllocs()
		for b.Loop() {
			r, err := c.Run(context.Background(), n)
			if err != nil {
				b.Fatal(err)
			}
			total.add(r)
		}
		reportThroughput(b, total, "req/s", false)
	}
}

// AcceptBench measures how fast srv, an echo server, accepts and serves new
// connections, with workers goroutines connecting at once (see Connect). It reports
// "conns/s".
func AcceptBench(srv Server, workers int) func(*testing.B) {
	return func(b *testing.B) {
		addr := startServer(b, srv)
		var total Result
		b.ReportAllocs()
		for b.Loop() {
			r, err := Connect(context.Background(), addr, ConnectConfig{Workers: workers}, acceptBatch)
			if err != nil {
				b.Fatal(err)
			}
			total.add(r)
		}
		reportThroughput(b, total, "conns/s", false)
	}
}

// UDPBench measures srv, a UDP echo server, with sockets connected sockets each
// echoing size-byte datagrams in a closed loop. It reports "dgrams/s" (datagrams
// echoed back) and "lost/op".
func UDPBench(srv Server, sockets, size int) func(*testing.B) {
	return func(b *testing.B) {
		addr := startServer(b, srv)
		c, err := DialUDP(context.Background(), addr, UDPConfig{Sockets: sockets, Size: size})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		var total Result
		n := perConn(sockets)
		b.ReportAllocs()
		for b.Loop() {
			r, err := c.Run(context.Background(), n)
			if err != nil {
				b.Fatal(err)
			}
			total.add(r)
		}
		reportThroughput(b, total, "dgrams/s", false)
		b.ReportMetric(float64(total.Lost)/float64(b.N), "lost/op")
	}
}

// IdleMemoryBench measures the memory srv's process spends per idle connection with
// conns connections held by a child process (see IdleConnMemory). It reports "B/conn"
// (heap+stack, the last iteration's figure), "RSS-B/conn" (resident set, where known)
// and "conns". The benchmark binary must call
// RunHolderIfChild at start.
func IdleMemoryBench(srv Server, conns int, mode HoldMode) func(*testing.B) {
	return func(b *testing.B) {
		var m MemResult
		for b.Loop() {
			var err error
			m, err = IdleConnMemory(context.Background(), srv, HoldConfig{Conns: conns, Mode: mode})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(m.PerConn(), "B/conn")
		if rss := m.RSSPerConn(); rss != 0 {
			b.ReportMetric(rss, "RSS-B/conn")
		}
		b.ReportMetric(float64(m.Conns), "conns")
	}
}

// reportThroughput reports total's operations per second of the timed part, and MB/s
// of payload if withBytes.
func reportThroughput(b *testing.B, total Result, unit string, withBytes bool) {
	sec := b.Elapsed().Seconds()
	if sec <= 0 {
		return
	}
	b.ReportMetric(float64(total.Ops)/sec, unit)
	if withBytes {
		b.ReportMetric(float64(total.Bytes)/sec/1e6, "MB/s")
	}
}
