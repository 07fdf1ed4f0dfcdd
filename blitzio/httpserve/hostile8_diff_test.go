//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// h8Raw sends raw on a new connection to addr, then a pipelined "GET /second" with
// "Connection: close", and returns every byte the server sent until it closed (or a
// 10 s bound passed), with the Date header's value replaced.
func h8Raw(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw+"GET /second HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	return h8DateRE.ReplaceAllString(string(b), "Date: D\r\n")
}

var h8DateRE = regexp.MustCompile(`Date: [^\r]*\r\n`)

// h8Canon sorts the header lines of every response head in s, so that header order
// does not count.
func h8Canon(s string) string {
	var out strings.Builder
	br := bufio.NewReader(strings.NewReader(s))
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			out.WriteString(line)
			rest, _ := io.ReadAll(br)
			out.Write(rest)
			return out.String()
		}
		if !strings.HasPrefix(line, "HTTP/1.") {
			out.WriteString(line)
			continue
		}
		out.WriteString(line)
		var hs []string
		for {
			l, err := br.ReadString('\n')
			if err != nil || l == "\r\n" {
				sort.Strings(hs)
				out.WriteString(strings.Join(hs, ""))
				out.WriteString(l)
				break
			}
			hs = append(hs, l)
		}
	}
}

// h8Compare serves h on net/http and on this package and returns what each sent for raw.
func h8Compare(t *testing.T, h http.Handler, raw string) (std, ours string) {
	t.Helper()
	stdAddr := h4StartNetHTTP(t, h)
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: h, ErrorLog: discardLog()})
	return h8Canon(h8Raw(t, stdAddr, raw)), h8Canon(h8Raw(t, ts.addr, raw))
}

func h8Probe(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	switch r.URL.Path {
	case "/second":
		io.WriteString(w, "2")
	case "/wh-twice":
		w.WriteHeader(201)
		w.WriteHeader(202)
	case "/103":
		w.Header().Set("Link", "</a>; rel=preload")
		w.Header().Set("Content-Length", "1")
		w.WriteHeader(103)
		w.Header().Set("X-After", "1")
		io.WriteString(w, "x")
	case "/100":
		w.WriteHeader(100)
		io.WriteString(w, "y")
	case "/101":
		w.WriteHeader(101)
	case "/99":
		w.WriteHeader(99)
	case "/1000":
		w.WriteHeader(1000)
	case "/599":
		w.WriteHeader(599)
	case "/999":
		w.WriteHeader(999)
	case "/write-then-header":
		io.WriteString(w, "hello")
		w.WriteHeader(500)
	case "/header-after-flush":
		io.WriteString(w, "hello")
		w.(http.Flusher).Flush()
		w.Header().Set("X-Late", "1")
		io.WriteString(w, "more")
	case "/cl-short":
		w.Header().Set("Content-Length", "10")
		io.WriteString(w, "hello")
	case "/cl-long":
		w.Header().Set("Content-Length", "3")
		_, err := io.WriteString(w, "hello")
		w.Header().Set("X-Err", fmt.Sprint(err))
	case "/cl-long-wh":
		w.Header().Set("Content-Length", "3")
		w.WriteHeader(200)
		_, err := io.WriteString(w, "hello")
		_ = err
	case "/cl-long-big":
		w.Header().Set("Content-Length", "3")
		io.WriteString(w, strings.Repeat("z", 5000))
	case "/cl-bad":
		w.Header().Set("Content-Length", "abc")
		io.WriteString(w, "hello")
	case "/cl-neg":
		w.Header().Set("Content-Length", "-1")
		io.WriteString(w, "hello")
	case "/head-body":
		io.WriteString(w, "<html>hello</html>")
	case "/204":
		w.WriteHeader(204)
		_, err := io.WriteString(w, "x")
		_ = err
	case "/204-cl":
		w.Header().Set("Content-Length", "5")
		w.WriteHeader(204)
	case "/304":
		w.Header().Set("Content-Length", "5")
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(304)
		io.WriteString(w, "x")
	case "/flush":
		io.WriteString(w, "a")
		w.(http.Flusher).Flush()
		io.WriteString(w, "b")
	case "/rc-flush":
		rc.Flush()
		io.WriteString(w, "c")
	case "/rc-flush-empty":
		err := rc.Flush()
		w.Header().Set("X-Err", fmt.Sprint(err))
	case "/rc":
		e1 := rc.SetReadDeadline(time.Now().Add(time.Hour))
		e2 := rc.SetWriteDeadline(time.Now().Add(time.Hour))
		e3 := rc.EnableFullDuplex()
		fmt.Fprintf(w, "%v|%v|%v", e1, e2, e3)
	case "/hijack-after-write":
		io.WriteString(w, "hello")
		c, bw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		bw.WriteString("RAW")
		bw.Flush()
		c.Close()
	case "/hijack-after-flush":
		io.WriteString(w, "hello")
		w.(http.Flusher).Flush()
		c, bw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		bw.WriteString("RAW")
		bw.Flush()
		c.Close()
	case "/panic":
		io.WriteString(w, "p")
		panic("boom")
	case "/panic-flushed":
		io.WriteString(w, "p")
		w.(http.Flusher).Flush()
		panic("boom")
	case "/abort":
		panic(http.ErrAbortHandler)
	case "/goexit":
		io.WriteString(w, "g")
		runtime.Goexit()
	case "/sniff":
		io.WriteString(w, "<html><body>hi</body></html>")
	case "/sniff-split":
		io.WriteString(w, "\x89P")
		io.WriteString(w, "NG\r\n\x1a\n")
	case "/sniff-ce":
		w.Header().Set("Content-Encoding", "gzip")
		io.WriteString(w, "<html>")
	case "/ct-nil":
		w.Header()["Content-Type"] = nil
		io.WriteString(w, "<html>")
	case "/trailer":
		w.Header().Set("Trailer", "X-T")
		io.WriteString(w, "body")
		w.Header().Set("X-T", "tv")
	case "/trailer-prefix":
		io.WriteString(w, "body")
		w.Header().Set(http.TrailerPrefix+"X-P", "pv")
	case "/conn-close":
		w.Header().Set("Connection", "close")
		io.WriteString(w, "cc")
	case "/conn-ka":
		w.Header().Set("Connection", "keep-alive")
		io.WriteString(w, "ka")
	case "/empty":
	case "/big":
		io.WriteString(w, strings.Repeat("b", 3000))
	case "/fields":
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		var te string
		if r.TransferEncoding != nil {
			te = fmt.Sprint(r.TransferEncoding)
		}
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "m=%s host=%s ra=%s uri=%s url=%s urlhost=%s path=%s rawq=%s proto=%s %d.%d cl=%d te=%q close=%v tls=%v body=%q err=%v trailer=%v form=%v",
			r.Method, r.Host, host, r.RequestURI, r.URL, r.URL.Host, r.URL.Path, r.URL.RawQuery, r.Proto, r.ProtoMajor, r.ProtoMinor,
			r.ContentLength, te, r.Close, r.TLS != nil, b, err, r.Trailer, r.Form)
		hs := make([]string, 0)
		for k, v := range r.Header {
			hs = append(hs, fmt.Sprintf("%s=%q", k, v))
		}
		sort.Strings(hs)
		fmt.Fprintf(w, " hdr=%v", hs)
	case "/body-after-write":
		io.WriteString(w, "x")
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, " %q %v", b, err)
	case "/write-err-types":
		w.WriteHeader(204)
		_, err := w.Write([]byte("x"))
		w.Header().Set("X-Err", fmt.Sprint(errors.Is(err, http.ErrBodyNotAllowed)))
	default:
		if strings.HasPrefix(r.URL.Path, "/fields") || r.URL.Path == "*" || r.Method == "OPTIONS" {
			fmt.Fprintf(w, "uri=%s url=%q urlhost=%s path=%s host=%s", r.RequestURI, r.URL.String(), r.URL.Host, r.URL.Path, r.Host)
			return
		}
		io.WriteString(w, "default "+r.URL.Path)
	}
}
