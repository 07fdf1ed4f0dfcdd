package netload_test

import (
	"strings"
	"testing"

	"github.com/blitzgo/blitz/benchmarks"
)

// The go test benchmarks run the cases of blitzbench's net and http suites, so they
// measure the same servers with the same bodies (blitzio's rows included once they are
// registered; until then those sub-benchmarks skip). Each sub-benchmark is named
// <case>/<server>, e.g. BenchmarkEcho/Echo-1000conns-128B/netpoll. The 15,000-connection
// idle-memory cases run here too, never in go test without -bench.

func benchSuiteCases(b *testing.B, suite, prefix string) {
	found := false
	for _, s := range benchmarks.Suites() {
		if s.Name != suite {
			continue
		}
		for _, c := range s.Cases(benchmarks.Config{}) {
			if !strings.HasPrefix(c.Name, prefix) {
				continue
			}
			found = true
			for _, impl := range append([]benchmarks.Impl{c.Ours}, c.Baselines...) {
				b.Run(c.Name+"/"+impl.Name, impl.Bench)
			}
		}
	}
	if !found {
		b.Fatalf("no case %s* in suite %s", prefix, suite)
	}
}

func BenchmarkEcho(b *testing.B)          { benchSuiteCases(b, "net", "Echo-") }
func BenchmarkAcceptConnect(b *testing.B) { benchSuiteCases(b, "net", "AcceptConnect") }
func BenchmarkUDP(b *testing.B)           { benchSuiteCases(b, "net", "UDP-") }
func BenchmarkIdleConnMemory(b *testing.B) {
	benchSuiteCases(b, "net", "IdleConnMemory-")
}
func BenchmarkHTTPPlaintext(b *testing.B)       { benchSuiteCases(b, "http", "Plaintext-") }
func BenchmarkIdleKeepAliveMemory(b *testing.B) { benchSuiteCases(b, "http", "IdleKeepAliveMemory-") }
func BenchmarkAdapterEcho(b *testing.B)         { benchSuiteCases(b, "http", "AdapterEcho-") }
