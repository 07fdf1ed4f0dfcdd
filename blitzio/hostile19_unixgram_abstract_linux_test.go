//go:build linux

package blitzio

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostile19UnixgramSendToAbstractFullLength: UnixConn.SendTo reaches an abstract
// name that fills sun_path ('@' and 107 bytes), as net.UnixConn.WriteToUnix does, on
// every backend. Before, the send converted the name with x/sys/unix, which keeps a
// byte for a NUL that an abstract name does not have, and failed with EINVAL. One byte
// longer fails in both.
func TestHostile19UnixgramSendToAbstractFullLength(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		prefix := fmt.Sprintf("@blitzio-h19-%d-%d-", syscall.Getpid(), time.Now().UnixNano())
		name := prefix + strings.Repeat("g", 108-len(prefix))
		recv, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
		if err != nil {
			t.Skipf("net cannot bind a full-length abstract name here: %v", err)
		}
		defer recv.Close()
		c, err := ListenUnixgram("unixgram", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		dest := &net.UnixAddr{Name: name, Net: "unixgram"}
		r := blockOn(t, rt, c.SendTo([]byte("full"), dest))
		if r.Err != nil || r.Value != 4 {
			t.Fatalf("SendTo a full-length abstract name: %d, %v", r.Value, r.Err)
		}
		recv.SetReadDeadline(time.Now().Add(10 * time.Second))
		b := make([]byte, 16)
		n, _, err := recv.ReadFromUnix(b)
		if err != nil || string(b[:n]) != "full" {
			t.Fatalf("the receiver got %q, %v", b[:n], err)
		}

		// One byte longer: refused by both, with the same error.
		long := &net.UnixAddr{Name: name + "x", Net: "unixgram"}
		r = blockOn(t, rt, c.SendTo([]byte("x"), long))
		nc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: prefix + "net", Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_, nerr := nc.WriteToUnix([]byte("x"), long)
		if r.Err == nil || nerr == nil || !errors.Is(r.Err, syscall.EINVAL) || !errors.Is(nerr, syscall.EINVAL) {
			t.Fatalf("SendTo a name one byte too long: %v; net: %v (both want EINVAL)", r.Err, nerr)
		}
	})
}
