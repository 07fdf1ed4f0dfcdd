//go:build linux

package blitzio

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestUnixStreamEchoPathAndAbstract(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		path := filepath.Join(t.TempDir(), "echo.sock")
		abstract := fmt.Sprintf("@blitzio-test-%d-%d", os.Getpid(), time.Now().UnixNano())
		for _, name := range []string{path, abstract} {
			l, err := ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			srv := Spawn(rt, Async(func(co *Co) error {
				r := Await(co, l.Accept())
				if r.Err != nil {
					return r.Err
				}
				c := r.Value
				defer c.Close()
				buf := make([]byte, 64)
				for {
					n, err := Await(co, c.Read(buf)).Get()
					if err == io.EOF {
						return c.CloseWrite()
					}
					if err != nil {
						return err
					}
					if _, err := Await(co, c.WriteAll(buf[:n])).Get(); err != nil {
						return err
					}
				}
			}))
			c, err := DialUnix("unix", nil, &net.UnixAddr{Name: name, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			got := blockOn(t, rt, Async(func(co *Co) string {
				Await(co, c.WriteVectored([]byte("hel"), []byte("lo")))
				c.CloseWrite()
				var out []byte
				buf := make([]byte, 3)
				for {
					n, err := Await(co, c.Read(buf)).Get()
					out = append(out, buf[:n]...)
					if err != nil {
						return string(out)
					}
				}
			}))
			if got != "hello" {
				t.Fatalf("%s: echo %q", name, got)
			}
			if r, err := waitHandle(t, srv); err != nil || r != nil {
				t.Fatal(name, err, r)
			}
			c.Close()
			l.Close()
			if name == path {
				if _, err := os.Stat(path); !os.IsNotExist(err) {
					t.Fatalf("socket file left after Close: %v", err)
				}
			}
		}
	})
}

func TestUnixgramSendRecv(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		dir := t.TempDir()
		a, err := ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "a"), Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		b, err := ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "b"), Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		buf := make([]byte, 16)
		pollOnceThenDrop(t, rt, b.RecvFrom(buf)) // a dropped receive takes nothing
		if r := blockOn(t, rt, a.SendTo([]byte("ping"), b.LocalAddr().(*net.UnixAddr))); r.Err != nil || r.Value != 4 {
			t.Fatal(r)
		}
		r := blockOn(t, rt, b.RecvFrom(buf))
		if r.Err != nil || string(buf[:r.Value.N]) != "ping" || r.Value.From.Name != a.LocalAddr().(*net.UnixAddr).Name {
			t.Fatalf("RecvFrom = %+v, %q", r, buf[:r.Value.N])
		}
		if r := blockOn(t, rt, a.SendTo([]byte("x"), nil)); r.Err == nil {
			t.Fatal("SendTo(nil) succeeded")
		}
	})
}

func TestUDPSendRecvV4V6AndConnected(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		for _, c := range []struct {
			network string
			ip      net.IP
		}{{"udp4", net.IPv4(127, 0, 0, 1)}, {"udp6", net.IPv6loopback}} {
			srv, err := ListenUDP(c.network, &net.UDPAddr{IP: c.ip})
			if err != nil {
				if c.network == "udp6" {
					t.Logf("no IPv6: %v", err)
					continue
				}
				t.Fatal(err)
			}
			defer srv.Close()
			// Server: echo each datagram to its sender.
			Spawn(rt, Async(func(co *Co) struct{} {
				buf := make([]byte, 1500)
				for {
					r := Await(co, srv.RecvFrom(buf))
					if r.Err != nil {
						return struct{}{}
					}
					Await(co, srv.SendTo(buf[:r.Value.N], r.Value.From))
				}
			}))
			cl, err := DialUDP(c.network, nil, srv.UDPAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if cl.RemoteAddr().String() != srv.LocalAddr().String() {
				t.Fatalf("RemoteAddr %v, want %v", cl.RemoteAddr(), srv.LocalAddr())
			}
			got := blockOn(t, rt, Async(func(co *Co) string {
				for i := range 10 {
					msg := fmt.Sprintf("datagram %d", i)
					if r := Await(co, cl.Send([]byte(msg))); r.Err != nil {
						return r.Err.Error()
					}
					buf := make([]byte, 64)
					r := Await(co, cl.Recv(buf))
					if r.Err != nil || string(buf[:r.Value]) != msg {
						return fmt.Sprintf("got %q, %v", buf[:r.Value], r.Err)
					}
				}
				return "ok"
			}))
			if got != "ok" {
				t.Fatal(c.network, got)
			}
		}
	})
}

func TestUDPOptionsBroadcastMulticast(t *testing.T) {
	rt := newRT(t, Config{Workers: 1})
	c, err := ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetBroadcast(true); err != nil {
		t.Fatal(err)
	}
	if err := c.SetTTL(7); err != nil {
		t.Fatal(err)
	}
	lo, _ := net.InterfaceByName("lo")
	group := net.IPv4(239, 1, 2, 3)
	if err := c.JoinGroup(lo, group); err != nil {
		t.Logf("JoinGroup v4 on lo: %v (no multicast on this loopback)", err)
	} else if err := c.LeaveGroup(lo, group); err != nil {
		t.Fatal(err)
	}
	if err := c.JoinGroup(nil, net.IPv4(127, 0, 0, 1)); err == nil {
		t.Fatal("JoinGroup with a unicast address succeeded")
	}
	if err := c.JoinGroup(nil, net.ParseIP("ff02::1")); err == nil {
		t.Fatal("JoinGroup v6 on a v4 socket succeeded")
	}
	if c6, err := ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err == nil {
		defer c6.Close()
		if err := c6.JoinGroup(lo, net.ParseIP("ff02::1:3")); err != nil {
			t.Logf("JoinGroup v6 on lo: %v", err)
		} else if err := c6.LeaveGroup(lo, net.ParseIP("ff02::1:3")); err != nil {
			t.Fatal(err)
		}
	}
	// Closing while a receive waits.
	h := Spawn(rt, c.RecvFrom(make([]byte, 8)))
	waitFor(t, "the receive to wait", func() bool {
		s := c.fd.sio.Load()
		if s == nil {
			return false
		}
		return s.waiters(dirRead) > 0
	})
	c.Close()
	if r, err := waitHandle(t, h); err != nil || !errors.Is(r.Err, net.ErrClosed) {
		t.Fatalf("receive on a closed socket = %v, %v", r.Err, err)
	}
	if _, err := ListenUDP("tcp", nil); err == nil {
		t.Fatal("ListenUDP(tcp) succeeded")
	}
	if _, err := DialUDP("udp4", nil, nil); err == nil {
		t.Fatal("DialUDP(nil) succeeded")
	}
}
