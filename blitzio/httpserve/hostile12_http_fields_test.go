//go:build linux || darwin || freebsd

package httpserve

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// h12FieldsHandler sets response header fields chosen by the seed in the path: the
// fields the framing decisions look at (Content-Length, before and after WriteHeader,
// Transfer-Encoding, Connection, Content-Type, Content-Encoding, Date) among up to 20
// others, more than a head's fields on the stack hold, some with keys that are not
// canonical, empty or invalid, and values with line breaks.
func h12FieldsHandler(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/second" {
		io.WriteString(w, "2")
		return
	}
	seed, _ := strconv.ParseUint(strings.TrimPrefix(r.URL.Path, "/"), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 12))
	h := w.Header()
	for i := range rng.IntN(21) {
		switch rng.IntN(6) {
		case 0:
			h.Set(fmt.Sprintf("X-F%02d", i), fmt.Sprint(i))
		case 1:
			h[fmt.Sprintf("x-lower-%d", i)] = []string{"v"}
		case 2:
			h.Add("X-Multi", fmt.Sprint(i))
		case 3:
			h.Set(fmt.Sprintf("X-Break%d", i), "a\r\nInjected: 1")
		case 4:
			h[fmt.Sprintf("Bad Key %d", i)] = []string{"v"}
		case 5:
			h["Z-Last"] = []string{"z", "zz"}
		}
	}
	if rng.IntN(8) == 0 {
		h[""] = []string{"empty key"}
	}
	body := strings.Repeat("b", rng.IntN(3)*7)
	setCL := rng.IntN(3) == 0
	if setCL {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	// Not both to an HTTP/1.0 request: net/http then promises "Connection:
	// keep-alive" for the Content-Length it drops a moment later, and closes the
	// connection to end the body; this server does not copy that contradiction.
	// Chunked or identity only: another coding is one of the documented differences
	// (see the package documentation).
	if rng.IntN(4) == 0 && !(setCL && r.ProtoMinor == 0) {
		h.Set("Transfer-Encoding", []string{"chunked", "identity"}[rng.IntN(2)])
	}
	if rng.IntN(4) == 0 {
		h.Set("Connection", []string{"close", "keep-alive", "Upgrade"}[rng.IntN(3)])
	}
	if rng.IntN(2) == 0 {
		h.Set("Content-Type", "text/x-test")
	}
	if rng.IntN(4) == 0 {
		h.Set("Content-Encoding", "gzip")
	}
	if rng.IntN(4) == 0 {
		h.Set("Date", "Thu, 01 Jan 1970 00:00:00 GMT")
	}
	status := []int{200, 200, 201, 204, 304, 404}[rng.IntN(6)]
	w.WriteHeader(status)
	switch rng.IntN(3) {
	case 0: // changed after WriteHeader: the snapshot taken there counts
		h.Set("Content-Length", "999")
	case 1:
		h.Del("Content-Length")
	}
	io.WriteString(w, body)
}

// TestHostile12ResponseFieldsMatchNetHTTP: for many combinations of header fields the
// response head is built from (see h12FieldsHandler), the server sends the bytes
// net/http's server sends, field order aside.
func TestHostile12ResponseFieldsMatchNetHTTP(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	seeds := 400
	if testing.Short() {
		seeds = 60
	}
	h := http.HandlerFunc(h12FieldsHandler)
	for seed := range seeds {
		// GET and HEAD, HTTP/1.1 and 1.0 (with and without keep-alive).
		raw := fmt.Sprintf([]string{
			"GET /%d HTTP/1.1\r\nHost: x\r\n\r\n",
			"HEAD /%d HTTP/1.1\r\nHost: x\r\n\r\n",
			"GET /%d HTTP/1.0\r\nHost: x\r\n\r\n",
			"GET /%d HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n",
		}[seed%4], seed)
		std, ours := h8Compare(t, h, raw)
		if std != ours {
			t.Fatalf("seed %d: responses differ\nnet/http:\n%q\nours:\n%q", seed, std, ours)
		}
	}
}
