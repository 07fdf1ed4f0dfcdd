package benchmarks

import (
	"fmt"
	"testing"

	"github.com/blitzgo/blitz/benchmarks/netload"
)

// The http suite measures HTTP/1.1 servers answering GET /plaintext (13-byte body) with
// the raw keep-alive, pipelining client of package netload, blitzio's beside net/http
// and github.com/valyala/fasthttp; the memory of idle keep-alive connections; and the
// cost of blitzio's net.Conn adapter against the standard library's net.

// blitzio's servers for the http suite, added from an init function of a file of their
// own like netServers (the first of a list is ours, the others our variants; an empty
// list leaves the baselines alone).
var (
	// httpServers are HTTP servers answering GET /plaintext (see netload.Server):
	// blitzio's own http.Handler serving first, then, as a variant, net/http over
	// blitzio's net.Listener adapter (netload.ServeHTTP serves any net.Listener).
	httpServers []netload.Server
	// adapterEchoServers are goroutine-per-connection echo servers whose connections
	// come from blitzio's net.Listener adapter, compared with the same server on net.
	adapterEchoServers []netload.Server
)

func init() {
	Register(Suite{
		Name:  "http",
		Title: "HTTP/1.1 plaintext under the same pipelining client: req/s, idle keep-alive memory, net.Conn adapter overhead (blitzio beside net/http and fasthttp)",
		Cases: httpCases,
	})
}

const (
	noBlitzioHTTP    = "no blitzio HTTP server registered yet (httpServers in suite_http.go)"
	noBlitzioAdapter = "no blitzio net.Conn adapter echo server registered yet (adapterEchoServers in suite_http.go)"
)

func httpCases(cfg Config) []Case {
	httpBase := []netload.Server{netload.NetHTTP(), netload.FastHTTP()}
	var cases []Case
	for _, conns := range []int{100, 1_000} {
		for _, p := range []int{1, 16} {
			// Issue targets: at 1,000 connections at least fasthttp; at 100, at least
			// 1.5x net/http.
			target := TimesBetter("net/http", 1.5)
			if conns == 1_000 {
				target = TimesBetter("fasthttp", 1)
			}
			cases = append(cases, netCase(
				fmt.Sprintf("Plaintext-%dconns-p%d", conns, p),
				fmt.Sprintf("GET /plaintext on %d keep-alive connections, %d request(s) written at once per connection, every response parsed and checked; requests/s", conns, p),
				"req/s", true, httpServers, httpBase, noBlitzioHTTP,
				func(s netload.Server) func(*testing.B) { return netload.HTTPBench(s, conns, p) },
				target))
		}
	}
	for _, k := range idleConnCounts(cfg) {
		cases = append(cases, netCase(fmt.Sprintf("IdleKeepAliveMemory-%d", k),
			fmt.Sprintf("%d idle keep-alive HTTP connections held by a child process (each served one GET /plaintext): server heap+stack in use per connection", k),
			"B/conn", false, httpServers, httpBase, noBlitzioHTTP,
			func(s netload.Server) func(*testing.B) { return netload.IdleMemoryBench(s, k, netload.HoldHTTP) },
			AtMost(1024)))
	}
	cases = append(cases, netCase("AdapterEcho-100conns-128B",
		"goroutine-per-connection echo over blitzio's net.Conn adapter against the same server on net; 100 connections x 128-byte messages, round trips/s",
		"msgs/s", true, adapterEchoServers, []netload.Server{netload.NetEcho()}, noBlitzioAdapter,
		func(s netload.Server) func(*testing.B) { return netload.EchoBench(s, 100, 128) }))
	return cases
}
