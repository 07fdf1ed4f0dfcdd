package benchmarks

import (
	"fmt"
	"testing"

	"github.com/blitzgo/blitz/benchmarks/netload"
)

// The net suite measures TCP and UDP servers with the load clients of package netload:
// echo throughput, connections accepted per second, UDP datagrams per second, and the
// memory each idle connection costs the server's process. Every server is measured by
// the same client in the same run: blitzio's beside a goroutine-per-connection server on
// the standard library's net package and one on github.com/cloudwego/netpoll.

// blitzio's servers for the net suite. A file of their own adds them from an init
// function, one line each:
//
//	func init() {
//		netServers = append(netServers, netload.Server{Name: "blitzio", Start: startBlitzioEcho})
//	}
//
// The first server of a list is the case's ours; any further one is shown as our
// variant (the other I/O backend, for instance "blitzio (epoll)" beside io_uring).
// While a list is empty, its cases measure the baselines only, and ours is a body that
// skips with a message saying the server is missing (blitzbench then lists the row as
// failed or skipped, and its targets as not measured).
var (
	// netServers are TCP echo servers (see netload.Server for what one must do), used
	// by the Echo, AcceptConnect and IdleConnMemory cases.
	netServers []netload.Server
	// udpServers are UDP echo servers, used by the UDP case.
	udpServers []netload.Server
)

func init() {
	// IdleConnMemory re-executes the running program as its connection holder; every
	// program that links this package (blitzbench, its tests) becomes one here.
	netload.RunHolderIfChild()
	Register(Suite{
		Name:  "net",
		Title: "TCP/UDP servers under the same load client: echo msgs/s, accepts/s, UDP datagrams/s, idle-connection memory (blitzio beside net and netpoll)",
		Cases: netCases,
	})
}

// netImpls turns blitzio's servers and the baselines into a case's implementations
// with body; see netServers for the roles.
func netImpls(ours, baselines []netload.Server, missing string, body func(netload.Server) func(*testing.B)) (Impl, []Impl, map[string]Role) {
	impl := Impl{Name: "blitzio", Bench: func(b *testing.B) { b.Skip(missing) }}
	var rest []Impl
	roles := map[string]Role{}
	for i, s := range ours {
		if i == 0 {
			impl = Impl{Name: s.Name, Bench: body(s)}
			continue
		}
		rest = append(rest, Impl{Name: s.Name, Bench: body(s)})
		roles[s.Name] = RoleVariant
	}
	for _, s := range baselines {
		rest = append(rest, Impl{Name: s.Name, Bench: body(s)})
	}
	if len(roles) == 0 {
		roles = nil
	}
	return impl, rest, roles
}

// netCase builds one case from its servers.
func netCase(name, note, metric string, higher bool, ours, baselines []netload.Server, missing string, body func(netload.Server) func(*testing.B), targets ...Target) Case {
	o, bs, roles := netImpls(ours, baselines, missing, body)
	if len(ours) == 0 {
		note += " [" + missing + ": its row is skipped]"
	}
	return Case{Name: name, Note: note, Metric: metric, HigherIsBetter: higher, Ours: o, Baselines: bs, Roles: roles, Targets: targets}
}

const (
	noBlitzioTCP = "no blitzio TCP echo server registered yet (netServers in suite_net.go)"
	noBlitzioUDP = "no blitzio UDP echo server registered yet (udpServers in suite_net.go)"
)

// idleConnCounts are the connection counts of the idle-memory cases: the same cost per
// connection at each is what shows it stays flat as connections grow.
func idleConnCounts(cfg Config) []int {
	if cfg.Quick {
		return []int{1_000, 5_000}
	}
	return []int{1_000, 5_000, 15_000}
}

func netCases(cfg Config) []Case {
	echoBase := []netload.Server{netload.NetEcho(), netload.NetpollEcho()}
	var cases []Case
	for _, conns := range []int{100, 1_000} {
		for _, size := range []int{128, 4096} {
			sizeName := "128B"
			if size == 4096 {
				sizeName = "4KiB"
			}
			// Issue targets: at 1,000 connections at least the best of net and
			// netpoll; at 100, at least net.
			targets := []Target{TimesBetter("net", 1)}
			if conns == 1_000 {
				targets = append(targets, TimesBetter("netpoll", 1))
			}
			cases = append(cases, netCase(
				fmt.Sprintf("Echo-%dconns-%s", conns, sizeName),
				fmt.Sprintf("%d connections, each echoing %d-byte messages in a closed loop (one in flight per connection), round trips/s", conns, size),
				"msgs/s", true, netServers, echoBase, noBlitzioTCP,
				func(s netload.Server) func(*testing.B) { return netload.EchoBench(s, conns, size) },
				targets...))
		}
	}
	cases = append(cases, netCase("AcceptConnect",
		"8 goroutines connecting: connect, a 1-byte echo (the server accepted and served it), close with RST; connections/s",
		"conns/s", true, netServers, echoBase, noBlitzioTCP,
		func(s netload.Server) func(*testing.B) { return netload.AcceptBench(s, 8) }))
	cases = append(cases, netCase("UDP-16socks-128B",
		"16 connected UDP sockets, each echoing 128-byte datagrams in a closed loop; datagrams echoed/s (a lost one is resent after 200ms)",
		"dgrams/s", true, udpServers, []netload.Server{netload.NetUDPEcho()}, noBlitzioUDP,
		func(s netload.Server) func(*testing.B) { return netload.UDPBench(s, 16, 128) }))
	for _, k := range idleConnCounts(cfg) {
		cases = append(cases, netCase(fmt.Sprintf("IdleConnMemory-%d", k),
			fmt.Sprintf("%d idle TCP connections held by a child process (each echoed 64 bytes once): server heap+stack in use per connection (net measured at 8-16 KB by others, nbio ~1 KB)", k),
			"B/conn", false, netServers, echoBase, noBlitzioTCP,
			func(s netload.Server) func(*testing.B) { return netload.IdleMemoryBench(s, k, netload.HoldEcho) },
			AtMost(512)))
	}
	return cases
}
