//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// h8Same fails unless net/http and this package send the same bytes (header order and
// the Date value aside) for raw, followed by a pipelined "GET /second".
func h8Same(t *testing.T, h http.Handler, raw string) {
	t.Helper()
	std, ours := h8Compare(t, h, raw)
	if std != ours {
		t.Errorf("%q:\n--- net/http\n%.1500s\n--- httpserve\n%.1500s", strings.SplitN(raw, "\r\n", 2)[0], std, ours)
	}
}

// TestHostile8DeclaredContentLengthEnforced: a handler that sets Content-Length and
// writes more than it declared. net/http takes the length at WriteHeader (explicit or
// implied by the first Write), fails the Write that goes past it with
// http.ErrContentLength and sends no more than the declared bytes. Sending the whole
// body after "Content-Length: 3" desynchronises the client: the extra bytes are read as
// the start of the next response.
func TestHostile8DeclaredContentLengthEnforced(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	errs := make(chan error, 8)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/second":
			io.WriteString(w, "2")
			return
		case "/explicit":
			w.Header().Set("Content-Length", "3")
			w.WriteHeader(200)
		case "/big":
			w.Header().Set("Content-Length", "3")
			_, err := io.WriteString(w, strings.Repeat("z", 5000))
			errs <- err
			return
		default:
			w.Header().Set("Content-Length", "3")
		}
		_, err := io.WriteString(w, "hello")
		errs <- err
	})
	for _, p := range []string{"/implicit", "/explicit", "/big"} {
		h8Same(t, h, "GET "+p+" HTTP/1.1\r\nHost: x\r\n\r\n")
		for range 2 { // net/http's handler, then ours
			select {
			case err := <-errs:
				if !errors.Is(err, http.ErrContentLength) {
					t.Errorf("%s: Write past the declared Content-Length returned %v, want http.ErrContentLength", p, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: handler did not report", p)
			}
		}
	}
}

// TestHostile8GoexitSendsNothing: a handler that writes a little and calls
// runtime.Goexit. net/http closes the connection and sends nothing (the response was
// only buffered); the buffered body bytes must not go out without their head.
func TestHostile8GoexitSendsNothing(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h8Same(t, http.HandlerFunc(h8Probe), "GET /goexit HTTP/1.1\r\nHost: x\r\n\r\n")
}

// TestHostile8SniffLargeFirstWrite: net/http sniffs the Content-Type from the first
// write whatever its size; a first write larger than the held-back buffer must not lose
// the Content-Type (HTTP/1.1 chunked and HTTP/1.0 close-delimited).
func TestHostile8SniffLargeFirstWrite(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h := http.HandlerFunc(h8Probe)
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: h, ErrorLog: discardLog()})
	for _, raw := range []string{"GET /big HTTP/1.1\r\nHost: x\r\n\r\n", "GET /big HTTP/1.0\r\n\r\n"} {
		c := ts.dial(t)
		resp := roundTrip(t, c, bufio.NewReader(c), raw, "GET")
		if got := resp.Header.Get("Content-Type"); got != "text/plain; charset=utf-8" {
			t.Errorf("%q: Content-Type %q, want the sniffed text/plain; charset=utf-8", raw, got)
		}
		if b := readBody(t, resp); len(b) != 3000 {
			t.Errorf("%q: body of %d bytes, want 3000", raw, len(b))
		}
	}
}

// TestHostile8NoBodyStatusHeaders: net/http drops Content-Length and Transfer-Encoding
// from a 204 (and 1xx), and Content-Type too from a 304 (suppressedHeaders): RFC 9110
// forbids a Content-Length in a 204, and a client that trusts one waits for a body.
func TestHostile8NoBodyStatusHeaders(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h := http.HandlerFunc(h8Probe)
	h8Same(t, h, "GET /204-cl HTTP/1.1\r\nHost: x\r\n\r\n")
	h8Same(t, h, "GET /304 HTTP/1.1\r\nHost: x\r\n\r\n")
}

// TestHostile8InformationalHeaders: net/http writes a 1xx response (103 Early Hints)
// with the header map less Content-Length and Transfer-Encoding (excludedHeadersNoBody).
func TestHostile8InformationalHeaders(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h8Same(t, http.HandlerFunc(h8Probe), "GET /103 HTTP/1.1\r\nHost: x\r\n\r\n")
}

// TestHostile8OptionsStar: net/http answers "OPTIONS *" itself with 200 and
// "Content-Length: 0" (its globalOptionsHandler) unless DisableGeneralOptionsHandler is
// set; http.ServeMux would answer it 400.
func TestHostile8OptionsStar(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "2") })
	h8Same(t, mux, "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")
	h8Same(t, mux, "OPTIONS * HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")

	ts := start(t, blitzio.BackendEpoll, &Server{Handler: mux, ErrorLog: discardLog(), DisableGeneralOptionsHandler: true})
	c := ts.dial(t)
	resp := roundTrip(t, c, bufio.NewReader(c), "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", "OPTIONS")
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("DisableGeneralOptionsHandler: status %d, want ServeMux's 400", resp.StatusCode)
	}
}
