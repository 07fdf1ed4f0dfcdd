package stress

import (
	"net"
	"testing"

	"golang.org/x/net/nettest"

	"github.com/blitzgo/blitz/blitzio/stream"
)

// TestConnAdapterNettestDuplex runs Go's net.Conn conformance suite (nettest.TestConn:
// basic I/O, ping-pong, racy reads and writes, read and write timeouts, past, present and
// future deadlines, Close unblocking, concurrent methods) over stream.NewConn adapting
// the two ends of an in-memory stream.Duplex. The same adapter serves TCP and Unix
// streams; this run checks the adapter's own half of the contract.
func TestConnAdapterNettestDuplex(t *testing.T) {
	nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
		a, b := stream.Duplex(64 << 10)
		c1, c2 = stream.NewConn(a), stream.NewConn(b)
		return c1, c2, func() { c1.Close(); c2.Close() }, nil
	})
}
