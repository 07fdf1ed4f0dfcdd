//go:build linux || darwin || freebsd

package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio/examples/internal/runex"
)

// backends are the I/O drivers these tests run on: the default (io_uring where the
// kernel allows it) and epoll, forced by BLITZIO_IOURING.
var backends = []struct{ name, env string }{{"default", ""}, {"epoll", "off"}}

func startEcho(t *testing.T, env string, args ...string) *runex.Program {
	t.Helper()
	if env != "" {
		t.Setenv("BLITZIO_IOURING", env)
	}
	return runex.Start(t, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
}

func dialEcho(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// A client that sends everything and then half-closes (shutdown(SHUT_WR), as "nc -N"
// does) gets every byte back, then the end of the stream.
func TestHostile7EchoHalfClose(t *testing.T) {
	size := 4 << 20
	if testing.Short() {
		size = 512 << 10
	}
	msg := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			prog := startEcho(t, b.env)
			c := dialEcho(t, prog.Addr)
			c.SetDeadline(time.Now().Add(30 * time.Second))
			werr := make(chan error, 1)
			go func() { // write while reading: the echo comes back as we send
				_, err := c.Write(msg)
				if err == nil {
					err = c.CloseWrite()
				}
				werr <- err
			}()
			got, err := io.ReadAll(c)
			if err != nil {
				t.Fatalf("reading the echo: %v after %d of %d bytes", err, len(got), len(msg))
			}
			if err := <-werr; err != nil {
				t.Fatalf("writing: %v", err)
			}
			if !bytes.Equal(got, msg) {
				t.Fatalf("echoed %d bytes, want the %d sent (first difference at %d)", len(got), len(msg), firstDiff(got, msg))
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// A client that writes and never reads: the server stops reading once its write blocks
// (TCP's flow control does the rest), so its memory does not grow with what the client
// pushes, other clients are still served, and SIGTERM still ends it once the grace is
// over (the connection is in flight, so the server waits for it up to -grace, then cuts
// it and exits 0).
func TestHostile7EchoClientThatNeverReads(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			prog := startEcho(t, b.env, "-grace", "1s")
			hog := dialEcho(t, prog.Addr)
			before, haveRSS := prog.RSS()
			pushed := pushUntilBlocked(t, hog, 256<<20)
			if after, ok := prog.RSS(); haveRSS && ok && after-before > 64<<20 {
				t.Fatalf("the server's memory grew by %d MiB while a client pushed %d MiB without reading",
					(after-before)>>20, pushed>>20)
			}
			other := dialEcho(t, prog.Addr)
			other.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := other.Write([]byte("still here")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, len("still here"))
			if _, err := io.ReadFull(other, buf); err != nil || string(buf) != "still here" {
				t.Fatalf("another client while one never reads: %q, %v", buf, err)
			}
			other.Close()
			if err := prog.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if l := prog.Next(); !strings.Contains(l, "stopping") {
				t.Fatalf("after SIGTERM: %q", l)
			}
			if code := prog.Wait(); code != 0 {
				t.Fatalf("exit code %d after the grace ran out, want 0", code)
			}
		})
	}
}

// pushUntilBlocked writes to c without reading until a write makes no progress for a
// while (the server has stopped reading) or limit bytes are written; it returns the
// bytes written.
func pushUntilBlocked(t *testing.T, c *net.TCPConn, limit int) int {
	t.Helper()
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	total := 0
	for total < limit {
		c.SetWriteDeadline(time.Now().Add(time.Second))
		n, err := c.Write(chunk)
		total += n
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return total
		}
		if err != nil {
			t.Fatalf("writing after %d bytes: %v", total, err)
		}
	}
	return total
}

// Bad flags, a bad address and a port in use: a clear message and a non-zero exit, at
// once (no hang, no half-started server).
func TestHostile7EchoRefusesBadStart(t *testing.T) {
	prog := startEcho(t, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-addr", prog.Addr}, "address already in use"},
		{[]string{"-addr", "nonsense"}, "missing port"},
		{[]string{"-addr", "127.0.0.1:99999"}, "invalid port"},
		{[]string{"-grace", "soon"}, "invalid value"},
		{[]string{"-nosuchflag"}, "flag provided but not defined"},
	} {
		out, code := prog.Run(tc.args...)
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%q: exit %d, output %q; want a non-zero exit and %q", tc.args, code, out, tc.want)
		}
	}
}
