//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// h4Served runs raw through net/http and this package with a handler that records the
// paths it serves (reading the body first), and returns both lists once each
// connection has closed.
func h4Served(t *testing.T, raw string) (std, ours []string) {
	t.Helper()
	var mu sync.Mutex
	var got *[]string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var err error
		if r.URL.Path != "/noread" {
			_, err = io.ReadAll(r.Body)
		}
		mu.Lock()
		*got = append(*got, r.URL.Path)
		mu.Unlock()
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		io.WriteString(w, r.URL.Path)
	})
	stdAddr := h4StartNetHTTP(t, h)
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: h, ErrorLog: discardLog()})
	for _, x := range []struct {
		addr string
		list *[]string
	}{{stdAddr, &std}, {ts.addr, &ours}} {
		mu.Lock()
		got = x.list
		mu.Unlock()
		c := dialRaw(t, x.addr)
		io.WriteString(c, raw)
		c.(*net.TCPConn).CloseWrite()           // a server waiting for more of a head sees EOF
		io.Copy(io.Discard, bufio.NewReader(c)) // until the server closes
		c.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	return std, ours
}

// TestHostile4NoRequestAfterBadChunkedBody: a malformed chunked body followed, in the
// same packet, by a request. net/http answers the first request and closes the
// connection: whatever follows a body it could not decode must not be parsed as a
// request (request smuggling). httpserve marks the connection to close (mustClose,
// "Connection: close" on the response) but then parses the leftover buffered bytes as
// the next request and serves it.
func TestHostile4NoRequestAfterBadChunkedBody(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	raw := "POST /first HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"zz\r\n" + // not a chunk size
		"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	std, ours := h4Served(t, raw)
	if len(std) != 1 || std[0] != "/first" {
		t.Fatalf("net/http served %v", std)
	}
	if len(ours) != len(std) {
		t.Fatalf("httpserve served %v; net/http served %v", ours, std)
	}
}

// TestHostile4NoRequestAfterConnectionClose: pipelined requests after one that says
// "Connection: close" arrive in the same packet. net/http serves the first and closes
// without reading further; httpserve answers with "Connection: close" and still serves
// the next.
func TestHostile4NoRequestAfterConnectionClose(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	raw := "GET /first HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" +
		"GET /second HTTP/1.1\r\nHost: x\r\n\r\n"
	std, ours := h4Served(t, raw)
	if len(std) != 1 || std[0] != "/first" {
		t.Fatalf("net/http served %v", std)
	}
	if len(ours) != len(std) {
		t.Fatalf("httpserve served %v; net/http served %v", ours, std)
	}
}

// TestHostile4NoRequestAfterHTTP10: an HTTP/1.0 request without keep-alive, then a
// request pipelined behind it: net/http serves only the first.
func TestHostile4NoRequestAfterHTTP10(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	raw := "GET /first HTTP/1.0\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n"
	std, ours := h4Served(t, raw)
	if len(std) != 1 || std[0] != "/first" {
		t.Fatalf("net/http served %v", std)
	}
	if len(ours) != len(std) {
		t.Fatalf("httpserve served %v; net/http served %v", ours, std)
	}
}

func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return c
}

// TestHostile4NoRequestFromUnreadLargeBody: a handler that does not read a large body
// (over net/http's 256 KiB discard limit). net/http closes the connection after the
// response; httpserve decides to close too, then parses the body bytes it had already
// buffered as the next request: a request hidden at the start of a body (which a front
// proxy forwards as data) is served.
func TestHostile4NoRequestFromUnreadLargeBody(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	body := "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	body += strings.Repeat("x", 300<<10-len(body))
	raw := "POST /noread HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	std, ours := h4Served(t, raw)
	if len(std) != 1 || std[0] != "/noread" {
		t.Fatalf("net/http served %v", std)
	}
	if len(ours) != len(std) {
		t.Fatalf("httpserve served %v; net/http served %v", ours, std)
	}
}

// TestHostile4NoPipelinedRequestAfterShutdown: Shutdown while the first of two pipelined
// requests is in its handler. net/http finishes that response and closes (no keep-alive
// once shutting down); httpserve serves the pipelined one too.
func TestHostile4NoPipelinedRequestAfterShutdown(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var mu sync.Mutex
	var served []string
	srv := &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served = append(served, r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	})}
	ts := start(t, blitzio.BackendEpoll, srv)
	c := ts.dial(t)
	io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n")
	<-entered
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done <- srv.Shutdown(ctx)
	}()
	waitFor(t, "Shutdown to begin", srv.inShutdown.Load)
	close(release)
	io.Copy(io.Discard, c) // until closed
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(served) != 1 {
		t.Fatalf("served %v after Shutdown began; net/http serves only /slow", served)
	}
}
