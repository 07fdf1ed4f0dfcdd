package benchmarks

import (
	"slices"
	"testing"

	"github.com/blitzgo/blitz/benchmarks/netload"
)

// TestNetSuiteHooks: a server appended to a hook list becomes the case's ours, a second
// one our variant; with the lists empty, ours is a body that skips.
func TestNetSuiteHooks(t *testing.T) {
	saved := [][]netload.Server{netServers, udpServers, httpServers, adapterEchoServers}
	defer func() {
		netServers, udpServers, httpServers, adapterEchoServers = saved[0], saved[1], saved[2], saved[3]
	}()

	netServers, udpServers, httpServers, adapterEchoServers = nil, nil, nil, nil
	for _, c := range append(netCases(Config{Quick: true}), httpCases(Config{Quick: true})...) {
		if c.Ours.Name != "blitzio" || c.Ours.Bench == nil {
			t.Fatalf("%s: ours = %q without a blitzio server", c.Name, c.Ours.Name)
		}
		if r := testing.Benchmark(c.Ours.Bench); r.N != 0 {
			t.Fatalf("%s: the missing blitzio row measured N=%d instead of skipping", c.Name, r.N)
		}
	}

	fake := func(name string) netload.Server { return netload.Server{Name: name, Start: netload.NetEcho().Start} }
	netServers = append(netServers, fake("blitzio"), fake("blitzio (epoll)"))
	udpServers = append(udpServers, netload.Server{Name: "blitzio", Start: netload.NetUDPEcho().Start})
	httpServers = append(httpServers, netload.Server{Name: "blitzio", Start: netload.NetHTTP().Start})
	adapterEchoServers = append(adapterEchoServers, fake("blitzio adapter"))
	for _, c := range append(netCases(Config{Quick: true}), httpCases(Config{Quick: true})...) {
		var names []string
		for _, b := range c.Baselines {
			names = append(names, b.Name)
		}
		switch {
		case c.Name == "UDP-16socks-128B":
			if c.Ours.Name != "blitzio" || !slices.Equal(names, []string{"net"}) {
				t.Errorf("%s: ours %q, baselines %q", c.Name, c.Ours.Name, names)
			}
		case c.Name == "AdapterEcho-100conns-128B":
			if c.Ours.Name != "blitzio adapter" || !slices.Equal(names, []string{"net"}) {
				t.Errorf("%s: ours %q, baselines %q", c.Name, c.Ours.Name, names)
			}
		case slices.Contains(names, "net/http"):
			if c.Ours.Name != "blitzio" || !slices.Equal(names, []string{"net/http", "fasthttp"}) {
				t.Errorf("%s: ours %q, baselines %q", c.Name, c.Ours.Name, names)
			}
		default:
			if c.Ours.Name != "blitzio" || !slices.Equal(names, []string{"blitzio (epoll)", "net", "netpoll"}) || c.Roles["blitzio (epoll)"] != RoleVariant {
				t.Errorf("%s: ours %q, baselines %q, roles %v", c.Name, c.Ours.Name, names, c.Roles)
			}
		}
	}
}
