//go:build linux || darwin || freebsd

package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
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

// startHTTPD starts the server and returns it with its host:port.
func startHTTPD(t *testing.T, env string, args ...string) (*runex.Program, string) {
	t.Helper()
	if env != "" {
		t.Setenv("BLITZIO_IOURING", env)
	}
	prog := runex.Start(t, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	return prog, strings.TrimPrefix(prog.Addr, "http://")
}

// A client that pipelines requests and never reads the responses: the server stops
// reading once its writes block, so its memory does not grow with what the client
// pushes; other clients are still served; and SIGTERM still ends the process (the
// response being written is in flight: the server waits up to -grace, then exits 0).
func TestHostile7HTTPDClientThatNeverReads(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			prog, addr := startHTTPD(t, b.env, "-grace", "1s")
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			before, haveRSS := prog.RSS()
			req := []byte("GET /json?name=" + strings.Repeat("a", 3000) + " HTTP/1.1\r\nHost: x\r\n\r\n")
			batch := bytes.Repeat(req, 20)
			total := 0
			for total < 128<<20 {
				c.SetWriteDeadline(time.Now().Add(time.Second))
				n, err := c.Write(batch)
				total += n
				if errors.Is(err, os.ErrDeadlineExceeded) {
					break // the server has stopped reading
				}
				if err != nil {
					t.Fatalf("pipelining after %d bytes: %v", total, err)
				}
			}
			if after, ok := prog.RSS(); haveRSS && ok && after-before > 64<<20 {
				t.Fatalf("the server's memory grew by %d MiB while a client pipelined %d MiB without reading",
					(after-before)>>20, total>>20)
			}
			client := &http.Client{Timeout: 20 * time.Second}
			resp, err := client.Get("http://" + addr + "/plaintext")
			if err != nil {
				t.Fatalf("another client while one never reads: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "Hello, World!" {
				t.Fatalf("another client: %q", body)
			}
			client.CloseIdleConnections()
			if err := prog.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if l := prog.Next(); !strings.Contains(l, "stopping") {
				t.Fatalf("after SIGTERM: %q", l)
			}
			if code := prog.Wait(); code != 0 {
				t.Fatalf("exit code %d, want 0", code)
			}
		})
	}
}

// Every response to a pipeline comes back, in order, when the client reads them all
// after writing them all (the server answers as they come and TCP holds the rest).
func TestHostile7HTTPDPipelineInOrder(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			_, addr := startHTTPD(t, b.env)
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			n := 500
			if testing.Short() {
				n = 100
			}
			var reqs bytes.Buffer
			for i := range n {
				if i%2 == 0 {
					reqs.WriteString("GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
				} else {
					reqs.WriteString("GET /json?name=n" + string(rune('a'+i%26)) + " HTTP/1.1\r\nHost: x\r\n\r\n")
				}
			}
			werr := make(chan error, 1)
			go func() { _, err := c.Write(reqs.Bytes()); werr <- err }()
			r := bufio.NewReader(c)
			for i := range n {
				resp, err := http.ReadResponse(r, nil)
				if err != nil {
					t.Fatalf("response %d: %v", i, err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := "Hello, World!"
				if i%2 == 1 {
					want = `{"message":"Hello, n` + string(rune('a'+i%26)) + `!"}` + "\n"
				}
				if err != nil || resp.StatusCode != 200 || string(body) != want {
					t.Fatalf("response %d: %d %q %v, want %q", i, resp.StatusCode, body, err, want)
				}
			}
			if err := <-werr; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Bad flags, a bad address and a port in use: a clear message and a non-zero exit, at
// once (no hang, no half-started server).
func TestHostile7HTTPDRefusesBadStart(t *testing.T) {
	prog, addr := startHTTPD(t, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-addr", addr}, "address already in use"},
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

// A client that sends its requests and half-closes (shutdown(SHUT_WR)) still gets every
// response, then the end of the stream.
func TestHostile7HTTPDHalfClose(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			_, addr := startHTTPD(t, b.env)
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.WriteString(c, "GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\nGET /json?name=half HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			if err := c.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(c)
			for i, want := range []string{"Hello, World!", `{"message":"Hello, half!"}` + "\n"} {
				resp, err := http.ReadResponse(r, nil)
				if err != nil {
					t.Fatalf("response %d after a half-close: %v", i, err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(body) != want {
					t.Fatalf("response %d: %q, %v; want %q", i, body, err, want)
				}
			}
			if rest, err := io.ReadAll(r); err != nil || len(rest) > 0 {
				t.Fatalf("after the responses: %q, %v; want the end of the stream", rest, err)
			}
		})
	}
}
