//go:build linux

package blitzio

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestHostile16FromNetTCP: a listener and a connection of package net taken over. The
// net values are closed (their Accept and Read fail with net.ErrClosed) but the
// sockets live on: the listener accepts through blitzio; bytes the net connection had
// not read are read through blitzio; the peer sees no end of stream until the blitzio
// stream closes, and then sees it. A listener inherited as a file (systemd's socket
// activation) comes through net.FileListener.
func TestHostile16FromNetTCP(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		nl, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		addr := nl.Addr().String()
		l, err := TCPListenerFromNet(nl)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, err := nl.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("the net listener after the take-over: Accept = %v, want net.ErrClosed", err)
		}
		if l.Addr().String() != addr {
			t.Fatalf("Addr %v, want %v", l.Addr(), addr)
		}
		acc := Spawn(rt, l.Accept())
		peer, err := net.Dial("tcp4", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer peer.Close()
		a, err := waitHandle(t, acc)
		if err != nil || a.Err != nil {
			t.Fatal(err, a.Err)
		}
		a.Value.Conn.Close()

		// A connection of package net with bytes it has not read.
		nl2, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer nl2.Close()
		go func() {
			c, err := nl2.Accept()
			if err == nil {
				c.Write([]byte("before"))
				io.Copy(c, c) // then an echo, until the blitzio side closes
				c.Close()
			}
		}()
		nc, err := net.DialTCP("tcp4", nil, nl2.Addr().(*net.TCPAddr))
		if err != nil {
			t.Fatal(err)
		}
		local, remote := nc.LocalAddr().String(), nc.RemoteAddr().String()
		time.Sleep(10 * time.Millisecond) // let "before" arrive
		s, err := TCPStreamFromNet(nc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("the net connection after the take-over: Read = %v, want net.ErrClosed", err)
		}
		if s.LocalAddr().String() != local || s.RemoteAddr().String() != remote {
			t.Fatalf("addresses %v -> %v, want %v -> %v", s.LocalAddr(), s.RemoteAddr(), local, remote)
		}
		buf := make([]byte, 6)
		if r := blockOn(t, rt, s.ReadFull(buf)); r.Err != nil || string(buf) != "before" {
			t.Fatalf("the bytes sent before the take-over: %q %v", buf, r.Err)
		}
		if r := blockOn(t, rt, s.WriteAll([]byte("echo"))); r.Err != nil {
			t.Fatal(r.Err)
		}
		if r := blockOn(t, rt, s.ReadFull(buf[:4])); r.Err != nil || string(buf[:4]) != "echo" {
			t.Fatalf("echo after the take-over: %q %v", buf[:4], r.Err)
		}
		if err := s.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		// The peer's echo loop ends at our FIN, and closes: we read the end.
		if r := blockOn(t, rt, s.Read(buf)); r.Err != io.EOF || r.Value != 0 {
			t.Fatalf("read after the peer closed: %d %v, want io.EOF", r.Value, r.Err)
		}
		s.Close()

		// Inherited as a file.
		nl3, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		f, err := nl3.File()
		nl3.Close()
		if err != nil {
			t.Fatal(err)
		}
		fl, err := net.FileListener(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		l3, err := TCPListenerFromNet(fl.(*net.TCPListener))
		if err != nil {
			t.Fatal(err)
		}
		defer l3.Close()
		acc3 := Spawn(rt, l3.Accept())
		p3, err := net.Dial("tcp4", l3.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		p3.Close()
		if a, err := waitHandle(t, acc3); err != nil || a.Err != nil {
			t.Fatal(err, a.Err)
		} else {
			a.Value.Conn.Close()
		}
	})
}

// TestHostile16FromNetDatagramAndUnix: UDP and Unix sockets taken over: a datagram sent
// before is received after; a Unix listener's file stays (neither the net listener's
// close nor ours removes it: the caller owns it); a socket of the wrong kind is refused
// and left open to its owner; nil is refused.
func TestHostile16FromNetDatagramAndUnix(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		nu, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		snd, err := net.DialUDP("udp4", nil, nu.LocalAddr().(*net.UDPAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer snd.Close()
		snd.Write([]byte("early"))
		u, err := UDPConnFromNet(nu)
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
		buf := make([]byte, 16)
		if r := blockOn(t, rt, u.RecvFrom(buf)); r.Err != nil || string(buf[:r.Value.N]) != "early" || r.Value.From.String() != snd.LocalAddr().String() {
			t.Fatalf("datagram sent before the take-over: %q from %v, %v", buf[:r.Value.N], r.Value.From, r.Err)
		}

		dir := t.TempDir()
		path := filepath.Join(dir, "s")
		nl, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		ul, err := UnixListenerFromNet(nl)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("the socket file after the net listener's close: %v", err)
		}
		acc := Spawn(rt, ul.Accept())
		nc, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		us, err := waitHandle(t, acc)
		if err != nil || us.Err != nil {
			t.Fatal(err, us.Err)
		}
		nc.Write([]byte("unix"))
		if r := blockOn(t, rt, us.Value.ReadFull(buf[:4])); r.Err != nil || string(buf[:4]) != "unix" {
			t.Fatalf("accepted Unix stream: %q %v", buf[:4], r.Err)
		}
		us.Value.Close()
		ul.Close()
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("the socket file after our listener's close: %v (the caller owns it)", err)
		}

		// A Unix stream connection of net, taken over.
		nl2, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "s2"), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer nl2.Close()
		go func() {
			if c, err := nl2.Accept(); err == nil {
				c.Write([]byte("hi"))
				c.Close()
			}
		}()
		nuc, err := net.DialUnix("unix", nil, nl2.Addr().(*net.UnixAddr))
		if err != nil {
			t.Fatal(err)
		}
		ust, err := UnixStreamFromNet(nuc)
		if err != nil {
			t.Fatal(err)
		}
		if r := blockOn(t, rt, ust.ReadFull(buf[:2])); r.Err != nil || string(buf[:2]) != "hi" {
			t.Fatalf("Unix stream after the take-over: %q %v", buf[:2], r.Err)
		}
		ust.Close()

		// The wrong kind: refused, and the net value is still its owner's.
		g, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "g"), Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		if s, err := UnixStreamFromNet(g); err == nil {
			s.Close()
			t.Fatal("UnixStreamFromNet of a datagram socket succeeded")
		}
		if err := g.SetReadDeadline(time.Now()); err != nil {
			t.Fatalf("the refused net socket was closed: %v", err)
		}
		uc, err := UnixConnFromNet(g)
		if err != nil {
			t.Fatalf("UnixConnFromNet of a datagram socket: %v", err)
		}
		uc.Close()
		if _, err := TCPStreamFromNet(nil); err == nil {
			t.Fatal("TCPStreamFromNet(nil) succeeded")
		}
		if _, err := UnixListenerFromNet(nil); err == nil {
			t.Fatal("UnixListenerFromNet(nil) succeeded")
		}
	})
}

// h16DupListener returns a loopback listener and package net's listener on the
// duplicate of its descriptor that File gives (closed at the test's end).
func h16DupListener(t *testing.T) (*TCPListener, net.Listener) {
	t.Helper()
	l := listenLoopback(t, "tcp4")
	f, err := l.File()
	if err != nil {
		t.Fatal(err)
	}
	nl, err := net.FileListener(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nl.Close() })
	return l, nl
}

// TestHostile16File: File duplicates the descriptor, as net's: package net serves the
// duplicate (net.FileListener, net.FileConn) beside ours and after our Close (which
// shut a listener down for every holder before: a child handed the listener in a
// graceful restart, or systemd for a taken-over one, lost it); the
// socket stays non-blocking (the runtime's reads rely on it); File after Close fails
// with net.ErrClosed.
func TestHostile16File(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 30*time.Second)
		rt := newRT(t, cfg)
		l, nl := h16DupListener(t)
		l.Close()
		if _, err := l.File(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("File after Close: %v, want net.ErrClosed", err)
		}
		go func() {
			if c, err := net.Dial("tcp4", nl.Addr().String()); err == nil {
				c.Write([]byte("dup"))
				c.Close()
			}
		}()
		c, err := nl.Accept()
		if err != nil {
			t.Fatalf("net's Accept on the duplicate after our Close: %v", err)
		}
		c.Close()

		// A listener taken over while another holder keeps the socket (systemd keeps
		// the sockets it activates): our Close leaves it listening for that holder.
		kept, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer kept.Close()
		kf, err := kept.File()
		if err != nil {
			t.Fatal(err)
		}
		kl, err := net.FileListener(kf)
		kf.Close()
		if err != nil {
			t.Fatal(err)
		}
		ours, err := TCPListenerFromNet(kl.(*net.TCPListener))
		if err != nil {
			t.Fatal(err)
		}
		ours.Close()
		go func() {
			if c, err := net.Dial("tcp4", kept.Addr().String()); err == nil {
				c.Close()
			}
		}()
		if c, err := kept.Accept(); err != nil {
			t.Fatalf("the other holder's Accept after our Close of the taken-over listener: %v", err)
		} else {
			c.Close()
		}

		// A stream: net writes through the duplicate, and our reads still do not
		// block (the descriptor is still non-blocking).
		a, b := connPair(t, rt)
		fa, err := a.File()
		if err != nil {
			t.Fatal(err)
		}
		nc, err := net.FileConn(fa)
		fa.Close()
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, err := nc.Write([]byte("via net")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 7)
		if r := blockOn(t, rt, b.ReadFull(buf)); r.Err != nil || string(buf) != "via net" {
			t.Fatalf("bytes written through the duplicate: %q %v", buf, r.Err)
		}
		h := Spawn(rt, a.Read(buf))
		time.Sleep(20 * time.Millisecond)
		if r := blockOn(t, rt, b.WriteAll([]byte("later"))); r.Err != nil {
			t.Fatal(r.Err)
		}
		if r, err := waitHandle(t, h); err != nil || r.Err != nil || string(buf[:r.Value]) != "later" {
			t.Fatalf("our read after File: %q %v %v", buf[:r.Value], err, r.Err)
		}
	})
}
