//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

func hello() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello "+r.URL.Path)
	})
}

func TestKeepAliveAndPipelining(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		ts := start(t, b, &Server{Handler: hello()})
		c := ts.dial(t)
		br := bufio.NewReader(c)
		for i := 0; i < 3; i++ {
			resp := roundTrip(t, c, br, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", "GET")
			if got := readBody(t, resp); got != "hello /a" || resp.ContentLength != 8 || resp.Close {
				t.Fatalf("keep-alive response %d: %q len %d close %v", i, got, resp.ContentLength, resp.Close)
			}
		}
		// 16 pipelined requests in one write: answered in order.
		var req string
		for i := 0; i < 16; i++ {
			req += "GET /p" + string(rune('a'+i)) + " HTTP/1.1\r\nHost: x\r\n\r\n"
		}
		io.WriteString(c, req)
		for i := 0; i < 16; i++ {
			resp := roundTrip(t, c, br, "", "GET")
			if got, want := readBody(t, resp), "hello /p"+string(rune('a'+i)); got != want {
				t.Fatalf("pipelined response %d: %q, want %q", i, got, want)
			}
		}
	})
}

// TestMalformedRequests sends requests net/http's server refuses and checks the status
// it answers with (the same as net/http's) and that the connection is then closed.
func TestMalformedRequests(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	cases := []struct {
		name, raw string
		code      int
	}{
		{"no proto", "GET /\r\n\r\n", 400},
		{"bad method", "G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"bad version", "GET / HTTP/1.x\r\nHost: x\r\n\r\n", 400},
		{"version 2", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
		{"version 0.9", "GET / HTTP/0.9\r\nHost: x\r\n\r\n", 505},
		{"missing host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
		{"bad host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
		{"header without colon", "GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400},
		{"space before colon", "GET / HTTP/1.1\r\nHost: x\r\nFoo : bar\r\n\r\n", 400},
		{"control in value", "GET / HTTP/1.1\r\nHost: x\r\nFoo: a\x01b\r\n\r\n", 400},
		{"obs-fold", "GET / HTTP/1.1\r\nHost: x\r\nFoo: a\r\n b\r\n\r\n", 400},
		{"bad content-length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n", 400},
		{"negative content-length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400},
		{"conflicting content-length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
		{"unknown transfer-encoding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
		// net/http reads the body of an HTTP/0.0 request as HTTP/1.1's (its readTransfer
		// defaults a zero version to 1.1), so an unknown transfer coding is refused with
		// 501 before the version is (found by FuzzParseRequest).
		{"version 0.0 with unknown transfer-encoding", "GET / HTTP/0.0\r\nHost: x\r\nTransfer-Encoding: 000\r\n\r\n", 501},
		{"version 0.9 with unknown transfer-encoding", "GET / HTTP/0.9\r\nHost: x\r\nTransfer-Encoding: 000\r\n\r\n", 505},
		{"two transfer-encodings", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
		{"bad uri", "GET %zz HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"expect other", "POST / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\na", 417},
		{"header too large", "GET / HTTP/1.1\r\nHost: x\r\nBig: " + strings.Repeat("a", 8000) + "\r\n\r\n", 431},
		{"body too large", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", 413},
	}
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		ts := start(t, b, &Server{Handler: hello(), MaxHeaderBytes: 1024, MaxBodyBytes: 10})
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				c := ts.dial(t)
				br := bufio.NewReader(c)
				resp := roundTrip(t, c, br, tc.raw, "GET")
				readBody(t, resp)
				if resp.StatusCode != tc.code {
					t.Fatalf("status %d, want %d", resp.StatusCode, tc.code)
				}
				if !resp.Close {
					t.Fatal("response does not say Connection: close")
				}
				if _, err := br.ReadByte(); err != io.EOF {
					t.Fatalf("after the error response: %v, want the connection closed (EOF)", err)
				}
			})
		}
		// Garbage with no line end fills the head limit: 431, then closed.
		c := ts.dial(t)
		go io.WriteString(c, strings.Repeat("\x00\xff", 4096))
		resp := roundTrip(t, c, bufio.NewReader(c), "", "GET")
		if resp.StatusCode != 431 {
			t.Fatalf("garbage: status %d, want 431", resp.StatusCode)
		}
	})
}

func TestChunkedBothWays(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		ts := start(t, b, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			// A response larger than the held-back 2 KB, in pieces: chunked.
			for i := 0; i < 3; i++ {
				w.Write([]byte(strings.Repeat(string(body), 1000)))
			}
		})})
		c := ts.dial(t)
		br := bufio.NewReader(c)
		for i := 0; i < 2; i++ {
			resp := roundTrip(t, c, br, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n1;ext=1\r\nc\r\n0\r\nTrailer-A: 1\r\n\r\n", "POST")
			got := readBody(t, resp)
			if got != strings.Repeat("abc", 3000) || resp.TransferEncoding == nil || resp.TransferEncoding[0] != "chunked" {
				t.Fatalf("chunked echo: %d bytes, TE %v", len(got), resp.TransferEncoding)
			}
		}
		// A malformed chunk: the handler's read fails and the connection closes.
		resp := roundTrip(t, c, br, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "POST")
		readBody(t, resp)
		if resp.StatusCode != 500 || !resp.Close {
			t.Fatalf("malformed chunk: status %d close %v", resp.StatusCode, resp.Close)
		}
	})
}

func TestExpectContinue(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		ts := start(t, b, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/refuse" {
				w.WriteHeader(403) // never reads the body: no 100 Continue
				return
			}
			body, _ := io.ReadAll(r.Body)
			w.Write(body)
		})})
		c := ts.dial(t)
		br := bufio.NewReader(c)
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
		line, err := br.ReadString('\n')
		if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
			t.Fatalf("before sending the body: %q %v, want 100 Continue", line, err)
		}
		br.ReadString('\n')
		resp := roundTrip(t, c, br, "hello", "POST")
		if got := readBody(t, resp); got != "hello" || resp.Close {
			t.Fatalf("after 100 Continue: %q close %v", got, resp.Close)
		}
		resp = roundTrip(t, c, br, "POST /refuse HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", "POST")
		readBody(t, resp)
		if resp.StatusCode != 403 || !resp.Close {
			t.Fatalf("refused: status %d close %v, want 403 and close (the body was never sent)", resp.StatusCode, resp.Close)
		}
	})
}

func TestFlusherStreamsChunks(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	eachBackend(t, func(t *testing.T, b blitzio.Backend) {
		next := make(chan struct{})
		ts := start(t, b, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "first")
			w.(http.Flusher).Flush()
			<-next // the client has seen "first" before the handler goes on
			io.WriteString(w, "second")
		})})
		c := ts.dial(t)
		br := bufio.NewReader(c)
		resp := roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET")
		buf := make([]byte, 5)
		if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first" {
			t.Fatalf("flushed part: %q %v", buf, err)
		}
		close(next)
		if rest := readBody(t, resp); rest != "second" {
			t.Fatalf("rest: %q", rest)
		}
		if resp.ContentLength != -1 || len(resp.TransferEncoding) == 0 {
			t.Fatalf("a flushed response is chunked: CL %d TE %v", resp.ContentLength, resp.TransferEncoding)
		}
		// ResponseController finds Flush too.
	})
}
