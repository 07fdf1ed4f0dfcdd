//go:build linux

package blitzio

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// TestHostile4UnixAbstractDroppedAccept: on an abstract address, an accept future
// polled (pending) and dropped loses nothing: the next accept gets the connection made
// after it, and the accepted side reports the abstract name. Unixgram on abstract names reports the sender's name.
func TestHostile4UnixAbstractDroppedAccept(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 20*time.Second)
		rt, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		name := fmt.Sprintf("@blitzio-h4-%d-%s", os.Getpid(), t.Name())
		ln, err := ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		pollOnceThenDrop(t, rt, ln.Accept())
		cl, err := DialUnix("unix", nil, &net.UnixAddr{Name: name, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		r := blockOn(t, rt, Timeout(hangBound, ln.Accept()))
		if r.Err != nil || r.Value.Err != nil {
			t.Fatalf("accept after drops: %+v", r)
		}
		srv := r.Value.Value
		defer srv.Close()
		if w := blockOn(t, rt, cl.WriteAll([]byte("abc"))); w.Err != nil {
			t.Fatal(w.Err)
		}
		buf := make([]byte, 3)
		if rr := blockOn(t, rt, srv.ReadFull(buf)); rr.Err != nil || string(buf) != "abc" {
			t.Fatalf("read %+v %q", rr, buf)
		}
		if got := srv.LocalAddr().String(); got != name {
			t.Errorf("accepted LocalAddr %q, want %q", got, name)
		}

		a, err := ListenUnixgram("unixgram", &net.UnixAddr{Name: name + "-a", Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		b, err := ListenUnixgram("unixgram", &net.UnixAddr{Name: name + "-b", Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if s := blockOn(t, rt, a.SendTo([]byte("dgram"), &net.UnixAddr{Name: name + "-b"})); s.Err != nil {
			t.Fatal(s.Err)
		}
		small := make([]byte, 2)
		d := blockOn(t, rt, b.RecvFrom(small))
		if d.Err != nil || d.Value.N != 2 || string(small) != "dg" || d.Value.From.Name != name+"-a" {
			t.Fatalf("unixgram recv: %+v %q", d, small)
		}
	})
}
