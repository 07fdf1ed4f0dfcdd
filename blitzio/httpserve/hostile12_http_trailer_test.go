//go:build linux || darwin || freebsd

package httpserve

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

// h12TrailerHandler answers by path: response trailers declared with a Trailer field
// or named with http.TrailerPrefix, set before and after the body, with names a trailer
// may not carry; and, for a request with a body, the request's Trailer map before and
// after the body was read, as the body of the response.
func h12TrailerHandler(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	switch r.URL.Path {
	case "/second":
		io.WriteString(w, "2")
	case "/declared":
		h.Set("Trailer", "X-Checksum, x-count")
		h.Add("Trailer", "Content-Length, If-Match, Host")
		io.WriteString(w, "body")
		h.Set("X-Checksum", "abc")
		h.Set("X-Count", "4")
		h.Set("Content-Length", "99") // not a valid trailer: dropped
	case "/prefixed":
		io.WriteString(w, "body")
		h.Set(http.TrailerPrefix+"X-Late", "late")
		h[http.TrailerPrefix+"x-raw"] = []string{"raw"}
	case "/prefixed-before":
		h.Set(http.TrailerPrefix+"X-Early", "early") // forces chunking, never in the head
		io.WriteString(w, "body")
	case "/declared-empty-body":
		h.Set("Trailer", "X-T")
		h.Set("X-T", "v")
	case "/declared-flushed":
		h.Set("Trailer", "X-T")
		io.WriteString(w, "part")
		w.(http.Flusher).Flush()
		h.Set("X-T", "after flush")
	case "/declared-with-cl":
		h.Set("Trailer", "X-T")
		h.Set("Content-Length", "4")
		io.WriteString(w, "body")
		h.Set("X-T", "not sent: the body is not chunked")
	case "/head":
		h.Set("Trailer", "X-T")
		io.WriteString(w, "body")
		h.Set("X-T", "v")
	case "/late-fields":
		// Changed after the implicit WriteHeader, while the head is still held back
		// with the body: no effect (http.ResponseWriter's contract).
		h.Set("X-Early", "1")
		h.Set("Content-Type", "text/x-early")
		io.WriteString(w, "body")
		h.Set("X-Late", "1")
		h.Del("X-Early")
		h.Set("Content-Type", "text/x-late")
		h.Set("Connection", "close")
	case "/echo-trailer":
		before := h12TrailerString(r.Trailer)
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "before=%s body=%q err=%v after=%s", before, b, err, h12TrailerString(r.Trailer))
	}
}

func h12TrailerString(t http.Header) string {
	if t == nil {
		return "nil"
	}
	var ks []string
	for k, v := range t {
		ks = append(ks, fmt.Sprintf("%s=%q", k, v))
	}
	sort.Strings(ks)
	return "{" + strings.Join(ks, " ") + "}"
}

// TestHostile12TrailersMatchNetHTTP: response trailers (a Trailer field, the
// http.TrailerPrefix form) and request trailers (the declared names in Request.Trailer
// before the body is read, their values after) are what net/http gives the client and
// the handler; so is the refusal of a declared Content-Length trailer, and a head held
// back with a small body is the header as WriteHeader saw it.
func TestHostile12TrailersMatchNetHTTP(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	chunked := func(path, trailerDecl, trailer string) string {
		s := "POST " + path + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
		if trailerDecl != "" {
			s += "Trailer: " + trailerDecl + "\r\n"
		}
		return s + "\r\n4\r\nbody\r\n0\r\n" + trailer + "\r\n"
	}
	for _, raw := range []string{
		"GET /declared HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /late-fields HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /prefixed HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /prefixed-before HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /declared-empty-body HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /declared-flushed HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /declared-with-cl HTTP/1.1\r\nHost: x\r\n\r\n",
		"HEAD /head HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /declared HTTP/1.0\r\nHost: x\r\n\r\n",
		chunked("/echo-trailer", "X-A, x-b", "X-A: 1\r\nX-B: 2\r\nX-Undeclared: 3\r\n"),
		chunked("/echo-trailer", "X-A", ""),
		chunked("/echo-trailer", "", "X-A: 1\r\n"),
		chunked("/echo-trailer", "X-A, Content-Length", "X-A: 1\r\n"),
		chunked("/echo-trailer", "Trailer", ""),
		chunked("/echo-trailer", " , ", ""),
		"POST /echo-trailer HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTrailer: X-A\r\n\r\nbody",
	} {
		std, ours := h8Compare(t, http.HandlerFunc(h12TrailerHandler), raw)
		if std != ours {
			t.Errorf("%q: responses differ\nnet/http:\n%q\nours:\n%q", raw, std, ours)
		}
	}
}
