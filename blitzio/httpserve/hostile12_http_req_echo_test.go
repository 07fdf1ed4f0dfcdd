//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// h12rqEcho answers with a description of every field of the request a handler can
// look at: in the X-Echo header (base64, so that a HEAD answer carries it too) and as
// the body. Values that differ from connection to connection (ports) are reduced to
// their form.
func h12rqEcho(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/second" && r.Method == "GET" {
		io.WriteString(w, "2")
		return
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("Method=%q", r.Method)
	if u := r.URL; u == nil {
		p("URL=nil")
	} else {
		p("URL.Scheme=%q Opaque=%q Host=%q", u.Scheme, u.Opaque, u.Host)
		if u.User != nil {
			pw, set := u.User.Password()
			p("URL.User=%q %q %v", u.User.Username(), pw, set)
		}
		p("URL.Path=%q RawPath=%q EscapedPath=%q", u.Path, u.RawPath, u.EscapedPath())
		p("URL.RawQuery=%q ForceQuery=%v Fragment=%q RawFragment=%q OmitHost=%v",
			u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment, u.OmitHost)
		p("URL.String=%q RequestURI()=%q Hostname=%q Port=%q", u.String(), u.RequestURI(), u.Hostname(), u.Port())
		q, qerr := url.ParseQuery(u.RawQuery)
		p("URL.Query=%v err=%v", h12rqValues(q), qerr != nil)
	}
	p("Proto=%q %d %d", r.Proto, r.ProtoMajor, r.ProtoMinor)
	p("Header.nil=%v len=%d", r.Header == nil, len(r.Header))
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p("H %q=%q", k, r.Header[k])
	}
	p("ContentLength=%d TransferEncoding=%q Close=%v Host=%q", r.ContentLength, r.TransferEncoding, r.Close, r.Host)
	p("RequestURI=%q TLS=%v Pattern=%q Response=%v GetBody=%v MultipartForm=%v",
		r.RequestURI, r.TLS != nil, r.Pattern, r.Response != nil, r.GetBody != nil, r.MultipartForm != nil)
	p("Trailer.declared=%s", h12rqTrailer(r.Trailer))
	p("UserAgent=%q Referer=%q Cookies=%d", r.UserAgent(), r.Referer(), len(r.Cookies()))
	if u, pw, ok := r.BasicAuth(); ok {
		p("BasicAuth=%q %q", u, pw)
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err != nil {
		p("RemoteAddr=unparsed %q", r.RemoteAddr)
	} else {
		p("RemoteAddr=%v:PORT", ap.Addr())
	}
	switch la := r.Context().Value(http.LocalAddrContextKey).(type) {
	case *net.TCPAddr:
		p("LocalAddr=*net.TCPAddr %v", la.IP)
	default:
		p("LocalAddr=%T", la)
	}
	p("Body.nil=%v NoBody=%v", r.Body == nil, r.Body == http.NoBody)
	var body []byte
	var berr error
	if r.Body != nil {
		body, berr = io.ReadAll(io.LimitReader(r.Body, 1<<20))
	}
	p("Body=%q err=%s", body, h12rqErrClass(berr))
	p("Trailer.after=%s", h12rqTrailer(r.Trailer))
	if r.Body != nil {
		p("Body.Close=%s", h12rqErrClass(r.Body.Close()))
	}
	// The form, as ParseForm builds it from the query and the body read above.
	r.Body = io.NopCloser(bytes.NewReader(body))
	ferr := r.ParseForm()
	p("Form=%v PostForm=%v err=%v", h12rqValues(r.Form), h12rqValues(r.PostForm), ferr != nil)

	echo := b.String()
	w.Header().Set("X-Echo", base64.StdEncoding.EncodeToString([]byte(echo)))
	io.WriteString(w, echo)
}

func h12rqValues(v url.Values) string {
	if v == nil {
		return "nil"
	}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%q=%q;", k, v[k])
	}
	return b.String()
}

func h12rqTrailer(t http.Header) string {
	if t == nil {
		return "nil"
	}
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("{")
	for _, k := range keys {
		fmt.Fprintf(&b, "%q=%q;", k, t[k])
	}
	b.WriteString("}")
	return b.String()
}

// h12rqErrClass reduces a body error to what both servers can agree on: the kind, not
// the text.
func h12rqErrClass(err error) string {
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		return "nil"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected-EOF"
	case errors.Is(err, http.ErrBodyReadAfterClose):
		return "after-close"
	case errors.As(err, &mbe):
		return "max-bytes"
	}
	return "error"
}

// h12rqServers is one net/http server and one of ours, both serving h12rqEcho, shared
// by the tests and the fuzz target of a process (started once, never stopped: a fuzz
// worker runs its inputs in one process).
var h12rqServers struct {
	once      sync.Once
	std, ours string
	err       error
}

func h12rqAddrs(t testing.TB) (std, ours string) {
	t.Helper()
	s := &h12rqServers
	s.once.Do(func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.err = err
			return
		}
		hs := &http.Server{Handler: http.HandlerFunc(h12rqEcho), ErrorLog: discardLog()}
		go hs.Serve(l)
		s.std = l.Addr().String()

		rt, err := blitzio.New(blitzio.Config{Workers: 2, Backend: blitzio.BackendEpoll})
		if err != nil {
			s.err = err
			return
		}
		bl, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			s.err = err
			return
		}
		srv := &Server{Handler: http.HandlerFunc(h12rqEcho), ErrorLog: discardLog()}
		go srv.Serve(rt, bl)
		s.ours = bl.Addr().String()
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.std, s.ours
}

// h12rqResp is one response as a client reads it: the status, the decoded echo (from
// X-Echo), the body, the status line's version, and whether the response says the
// connection closes after it.
type h12rqResp struct {
	status     int
	proto      string
	close      bool
	echo, body string
}

// h12rqSecond is what h12rqExchange sends after raw: a request the servers answer
// with "2" when they read raw as one request with the framing it declares.
const h12rqSecond = "GET /second HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

// h12rqExchange sends raw and h12rqSecond on a new connection to addr, half-closes
// it, and reads responses until the server closes (bounded by a 10 s deadline, which
// fails the exchange). method is raw's, for reading a HEAD response.
func h12rqExchange(addr, raw string) ([]h12rqResp, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw+h12rqSecond); err != nil {
		return nil, err
	}
	c.(*net.TCPConn).CloseWrite()
	method, _, _ := strings.Cut(raw, " ")
	br := bufio.NewReader(c)
	var out []h12rqResp
	for i := 0; ; i++ {
		if _, err := br.Peek(1); err != nil {
			if errors.Is(err, io.EOF) || isReset(err) {
				return out, nil
			}
			return out, err
		}
		m := method
		if i > 0 && len(out) > 0 && out[len(out)-1].status >= 200 {
			m = "GET"
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: m})
		if err != nil {
			rest, _ := io.ReadAll(br)
			return append(out, h12rqResp{body: fmt.Sprintf("unreadable response: %v %q", err, rest)}), nil
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil && !isReset(err) {
			return out, err
		}
		e, _ := base64.StdEncoding.DecodeString(resp.Header.Get("X-Echo"))
		out = append(out, h12rqResp{status: resp.StatusCode, proto: resp.Proto, close: resp.Close, echo: string(e), body: string(b)})
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "reset")
}

// h12rqDiff sends raw to both servers and returns a description of how what they
// answered differs, or "".
func h12rqDiff(t testing.TB, raw string) string {
	t.Helper()
	std, ours := h12rqAddrs(t)
	sr, serr := h12rqExchange(std, raw)
	or, oerr := h12rqExchange(ours, raw)
	if serr != nil || oerr != nil {
		if serr != nil && oerr == nil {
			return "" // net/http failed (a deadline it sat out): nothing to compare
		}
		return fmt.Sprintf("exchange failed: net/http %v, ours %v", serr, oerr)
	}
	return h12rqCompare(sr, or)
}

// h12rqBodyFailed reports whether an echo shows a failed read of the request body.
func h12rqBodyFailed(echo string) bool {
	return strings.Contains(echo, " err=error\n") || strings.Contains(echo, " err=unexpected-EOF\n")
}

func h12rqCompare(sr, or []h12rqResp) string {
	var d strings.Builder
	for i := 0; i < max(len(sr), len(or)); i++ {
		var s, o h12rqResp
		if i < len(sr) {
			s = sr[i]
		}
		if i < len(or) {
			o = or[i]
		}
		if s.status == http.StatusExpectationFailed && o.status == s.status && s.proto == "HTTP/1.0" {
			o.proto = s.proto // reported: the 417 to an HTTP/1.0 request says HTTP/1.1 (conn.go)
		}
		broken := i == 0 && s.echo == o.echo && h12rqBodyFailed(s.echo)
		if broken {
			// The body's read failed (a broken framing, or the client's end came
			// first): this server says "Connection: close" and closes (documented);
			// net/http closes without saying so, or reads a next request from where
			// the body's read stopped. Nothing after it compares.
			s.close, o.close = false, false
		}
		if s == o {
			if broken {
				break
			}
			continue
		}
		fmt.Fprintf(&d, "response %d:\n", i)
		if s.status != o.status || s.proto != o.proto || s.close != o.close {
			fmt.Fprintf(&d, "  status: net/http %s %d close=%v, ours %s %d close=%v\n", s.proto, s.status, s.close, o.proto, o.status, o.close)
		}
		sl, ol := strings.Split(s.echo, "\n"), strings.Split(o.echo, "\n")
		if s.echo != o.echo {
			for j := 0; j < max(len(sl), len(ol)); j++ {
				var a, b string
				if j < len(sl) {
					a = sl[j]
				}
				if j < len(ol) {
					b = ol[j]
				}
				if a != b {
					fmt.Fprintf(&d, "  net/http: %s\n  ours:     %s\n", a, b)
				}
			}
		} else if s.body != o.body {
			fmt.Fprintf(&d, "  body: net/http %q, ours %q\n", s.body, o.body)
		}
	}
	return d.String()
}

// h12rqMatrix is the systematic matrix of request heads, from the request target to
// the body's framing. "%s" in a line is replaced by nothing: each is a whole request.
func h12rqMatrix() []string {
	var m []string
	get := func(target string) string { return "GET " + target + " HTTP/1.1\r\nHost: h.example\r\n\r\n" }
	// Request targets.
	for _, target := range []string{
		"/", "/a/b/c", "/a?b=c&d=e", "/a?", "/?", "/a??", "/a?b?c", "/a?b=1;c=2", "/a?%zz", "/a?b=%41",
		"/a?b=c#frag", "/a#frag", "/#", "/a%2Fb", "/a%2fb", "/%zz", "/a%20b", "/a%", "/a%2",
		"/\u00e9t\u00e9", "/%C3%A9", "//double//slash", "//host/path", "///triple",
		"/a/./b/../c", "/..", "/./", "/a/..%2F..", "/~user/_-.", "/!$&'()*+,;=:@", "/a[b]",
		"/a\"b", "/a<b>", "/a{b}|", "/a\\b", "/a^`", "/a?b c", "/a?\u00e9", "/a?b=c d",
		"*", "/*", "http://example.com/p?q#f", "http://example.com", "https://example.com:8443/x",
		"http://user:pw@example.com/x", "http://user@example.com/x", "http://[::1]:8080/x",
		"http://[fe80::1%25en0]/x", "http://Example.COM/X", "http://example.com:/x",
		"http://example.com:99999/x", "http:///x", "http:/x", "http:x", "HTTP://example.com/x",
		"ftp://example.com/x", "mailto:a@b", "example.com:443", "a", "?a", "%2F", "", "http://a b/",
		"/a\x7fb", "/a\tb", "http://ex%41mple.com/x", "http://example.com/%zz", "/;p", "/a;b?c;d",
	} {
		m = append(m, get(target))
	}
	// Methods.
	for _, method := range []string{"POST", "PUT", "HEAD", "DELETE", "PATCH", "OPTIONS", "TRACE",
		"get", "Get", "head", "PROPFIND", "X-CUSTOM_1", "M!#$%&'*+-.^_`|~", "BREW", "G@T", "G\u00e9T", "PRI"} {
		m = append(m, method+" /m HTTP/1.1\r\nHost: h\r\n\r\n")
	}
	m = append(m,
		"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc",
		"OPTIONS http://h/ HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET * HTTP/1.1\r\nHost: h\r\n\r\n",
		"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
		"CONNECT example.com:443 HTTP/1.1\r\n\r\n",
		"CONNECT example.com HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT [::1]:443 HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT user@h:1 HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT /rpc HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT /rpc HTTP/1.1\r\n\r\n",
		"CONNECT http://h/x HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT * HTTP/1.1\r\nHost: x\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"PRI * HTTP/2.0\r\nHost: h\r\n\r\n",
	)
	// Versions.
	for _, v := range []string{"HTTP/1.0", "HTTP/1.1", "HTTP/1.2", "HTTP/1.10", "HTTP/01.1", "HTTP/0.9",
		"HTTP/2.0", "HTTP/3.0", "http/1.1", "HTTP/1", "HTTP/1.1 ", "HTTP/+1.1", "HTTP/1.01"} {
		m = append(m, "GET /v "+v+"\r\nHost: h\r\n\r\n", "GET /v "+v+"\r\n\r\n")
	}
	// Host.
	for _, h := range []string{
		"Host: h\r\n", "", "Host:\r\n", "Host: \r\n", "Host: a\r\nHost: a\r\n", "Host: a\r\nHost: b\r\n",
		"Host: h:80\r\n", "Host: [::1]:80\r\n", "Host: a b\r\n", "Host: a/b\r\n", "Host: a@b\r\n",
		"Host: \u00e9\r\n", "Host: a\tb\r\n", "host: lower\r\n", "HOST: upper\r\n", "Host: h\r\nhost: h\r\n",
		"Host: a_b.example\r\n", "Host: a%41\r\n", "Host: (x)\r\n",
	} {
		m = append(m,
			"GET /host HTTP/1.1\r\n"+h+"\r\n",
			"GET /host HTTP/1.0\r\n"+h+"\r\n",
			"GET http://abs.example/host HTTP/1.1\r\n"+h+"\r\n",
			"GET http://abs.example:81/host HTTP/1.0\r\n"+h+"\r\n",
			"GET http:///host HTTP/1.1\r\n"+h+"\r\n",
		)
	}
	// Connection.
	for _, c := range []string{"close", "Close", "CLOSE", "keep-alive", "Keep-Alive", "upgrade",
		"keep-alive, close", "close, keep-alive", "foo, close", "foo,close", "  close  ", "closed",
		"te, keep-alive", "Upgrade, HTTP2-Settings", ",", "", "close\r\nConnection: keep-alive",
		"keep-alive\r\nConnection: close", "x-close", "close;x"} {
		for _, v := range []string{"HTTP/1.0", "HTTP/1.1"} {
			m = append(m, "GET /conn "+v+"\r\nHost: h\r\nConnection: "+c+"\r\n\r\n")
		}
	}
	m = append(m, "GET /up HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
		"GET /up HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
	// Header lines.
	for _, h := range []string{
		"X-A: 1\r\nX-A: 2\r\n", "X-A: 1\r\nx-a: 2\r\nX-a: 3\r\n", "X-A:\r\n", "X-A: \r\n", "X-A:  \t v \t \r\n",
		"X-A:v\r\n", "x-b: v\r\n", "X_B: v\r\n", "x_b-c: v\r\n", "X-A : v\r\n", " X-A: v\r\n", "X A: v\r\n",
		"X-A\r\n", ": v\r\n", "X-\u00e9: v\r\n", "X-A: \u00e9\u00e8\r\n", "X-A: a\x00b\r\n", "X-A: a\x01b\r\n",
		"X-A: a\x7fb\r\n", "X-A: a\rb\r\n", "X-A: a\tb\r\n", "X-A: \xff\xfe\r\n", "!#$%&'*+-.^_`|~: v\r\n",
		"X-A: " + strings.Repeat("v", 8000) + "\r\n", "X-A: a,b, c\r\n", "Content-Type: application/x-www-form-urlencoded\r\n",
		"Pragma: no-cache\r\n", "Pragma: no-cache\r\nCache-Control: max-age=0\r\n", "Pragma: No-Cache\r\n",
		"Pragma: no-cache, x\r\n", "Cookie: a=1; b=2\r\n", "Cookie: a=1\r\nCookie: b=2\r\n",
		"Authorization: Basic dXNlcjpwYXNz\r\n", "User-Agent: ua\r\nReferer: /r\r\nReferrer: /r2\r\n",
		"X-A: 1\nX-B: 2\n", "X-A: 1\r\n\r\n", "Accept-Encoding: gzip\r\ncontent-length: 0\r\n",
		"X-A: a\r\nTrailer: X-T\r\n", "X-A: a\r\n\tb\r\n", "HTTP2-Settings: x\r\n", "Te: trailers\r\n",
		"Proxy-Connection: keep-alive\r\n", "Keep-Alive: timeout=5\r\n", "Upgrade: h2c\r\n",
		"Transfer-Encoding: identity\r\n", "Expect: \r\n",
	} {
		m = append(m, "GET /hdr HTTP/1.1\r\nHost: h\r\n"+h+"\r\n", "GET /hdr HTTP/1.0\r\n"+h+"\r\n")
	}
	m = append(m, "GET /lf HTTP/1.1\nHost: h\n\n", "GET /lf HTTP/1.1\nHost: h\r\n\n", "GET /lf HTTP/1.1\r\nHost: h\n\r\n")
	// Content-Length.
	for _, cl := range []string{"0", "3", "03", "003", "+3", "-3", " 3", "3 ", "\t3", "3.0", "0x3", "1e1", "",
		"3, 3", "3,3", "99999999999999999999", "9223372036854775807", "2\r\nContent-Length: 2",
		"3\r\nContent-Length: 3", "3\r\nContent-Length:  3 ", "3\r\nContent-Length: 4", "3\r\nContent-Length: 03",
		"3\r\ncontent-length: 3", "3\r\nContent-Length:", "\u0663"} {
		for _, method := range []string{"POST", "GET", "HEAD"} {
			m = append(m, method+" /cl HTTP/1.1\r\nHost: h\r\nContent-Length: "+cl+"\r\n\r\nabc")
		}
		m = append(m, "POST /cl HTTP/1.0\r\nContent-Length: "+cl+"\r\n\r\nabc")
	}
	m = append(m, "POST /nocl HTTP/1.1\r\nHost: h\r\n\r\nabc", "POST /nocl HTTP/1.0\r\n\r\n",
		"POST /form?q=1&b=0 HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 11\r\n\r\nb=2&c=3%zzz",
		"POST /form?q=1 HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 7\r\n\r\nb=2&c=3",
		"PUT /form?q=1 HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded; charset=utf-8\r\nContent-Length: 3\r\n\r\nb=2",
		"GET /form?q=1 HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\nb=2",
		"POST /form HTTP/1.1\r\nHost: h\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 3\r\n\r\nb=2",
		"POST /short HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\nabc",
	)
	// Transfer-Encoding.
	const chunkedBody = "3\r\nabc\r\n0\r\n\r\n"
	for _, te := range []string{"chunked", "Chunked", "CHUNKED", " chunked ", "chunked, chunked", "chunked\r\nTransfer-Encoding: chunked",
		"gzip", "gzip, chunked", "chunked, gzip", "identity", "identity, chunked", "", "chunked;q=1", "x-chunked", "chunked\r\nContent-Length: 3",
		"chunked\r\nContent-Length: 99", "chunked\r\nContent-Length: zz", "chunked\r\nTrailer: X-T", "chunked\r\nTrailer: X-T, ,x-u",
		"chunked\r\nTrailer:", "chunked\r\nTrailer: Content-Length", "chunked\r\nTrailer: host"} {
		for _, v := range []string{"HTTP/1.0", "HTTP/1.1"} {
			m = append(m, "POST /te "+v+"\r\nHost: h\r\nTransfer-Encoding: "+te+"\r\n\r\n"+chunkedBody)
		}
	}
	for _, body := range []string{
		"3;ext=1\r\nabc\r\n0\r\n\r\n", "3;a;b=\"c\"\r\nabc\r\n0;x\r\n\r\n", "3 \r\nabc\r\n0\r\n\r\n", "03\r\nabc\r\n0\r\n\r\n",
		"3\r\nabc\r\n0\r\nX-T: v\r\n\r\n", "3\r\nabc\r\n0\r\nX-T: v\r\nX-T: w\r\nx-u:u\r\n\r\n", "3\r\nabc\r\n0\r\nHost: t\r\n\r\n",
		"3\r\nabc\r\n0\r\nContent-Length: 9\r\n\r\n", "3\r\nabc\r\n", "3\r\nabcX\r\n0\r\n\r\n", "zz\r\n", "-1\r\nabc\r\n0\r\n\r\n",
		"0x3\r\nabc\r\n0\r\n\r\n", "3\nabc\n0\n\n", "A\r\n0123456789\r\n0\r\n\r\n", "3\r\nabc\r\n0\r\n",
		"1\r\na\r\n1\r\nb\r\n1\r\nc\r\n0\r\n\r\n", "\r\n3\r\nabc\r\n0\r\n\r\n", "3\r\nabc\r\n00000\r\n\r\n",
	} {
		m = append(m, "POST /chunks HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n"+body)
	}
	// Expect.
	for _, e := range []string{"100-continue", "100-Continue", "100-continue, x", "x, 100-continue", "x", "", " ",
		"100-continue\r\nExpect: x", "x\r\nExpect: 100-continue", "100-continuex", "100-continue;x"} {
		m = append(m, "POST /expect HTTP/1.1\r\nHost: h\r\nExpect: "+e+"\r\nContent-Length: 3\r\n\r\nabc",
			"GET /expect HTTP/1.1\r\nHost: h\r\nExpect: "+e+"\r\n\r\n",
			"POST /expect HTTP/1.0\r\nExpect: "+e+"\r\nContent-Length: 3\r\n\r\nabc")
	}
	// Bodies on GET and HEAD, leading empty lines.
	m = append(m,
		"GET /gb HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi",
		"HEAD /hb HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi",
		"HEAD /hb HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
		"DELETE /db HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi",
		"\r\nGET /lead HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx\r\n",
		"POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx\r\n\r\n",
		"GET  /twospace HTTP/1.1\r\nHost: h\r\n\r\n", "GET /a b HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /tab\tHTTP/1.1\r\nHost: h\r\n\r\n", " GET / HTTP/1.1\r\nHost: h\r\n\r\n", "GET\r\n\r\n",
		"GET /\r\nHost: h\r\n\r\n", "GET / HTTP/1.1 x\r\nHost: h\r\n\r\n",
	)
	return m
}

// h12rqKnown are the differences the package documents (or reports as open defects):
// the raw requests they cover are left out of the matrix comparison, and each has a
// test of its own below.
func h12rqKnown(raw string) string {
	head, _, _ := strings.Cut(raw, "\r\n\r\n")
	if strings.Contains(head, "\n ") || strings.Contains(head, "\n\t") {
		return "obs-fold refused (documented)"
	}
	line, _, _ := strings.Cut(head, "\n")
	if strings.HasSuffix(strings.TrimSuffix(line, "\r"), " HTTP/1.0") {
		var conn []string
		for _, l := range strings.Split(head, "\n")[1:] {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(k, "Connection") {
				conn = append(conn, strings.TrimSpace(v))
			}
		}
		// net/http's wants10KeepAlive (keep-alive among the words of the first line)
		// against Request.Close's rule, which this server follows (documented).
		netKeep := len(conn) > 0 && hasToken(conn[0], "keep-alive")
		oursKeep := !headerHasToken(conn, "close") && headerHasToken(conn, "keep-alive")
		if netKeep != oursKeep {
			return "HTTP/1.0 keep-alive decided as Request.Close says (documented)"
		}
	}
	if n := headEnd([]byte(raw)); n > 0 && strings.Contains(strings.ToLower(raw[:n]), "chunked") &&
		strings.Contains(strings.ReplaceAll(raw[n:], "\r\n", ""), "\n") {
		return "a chunked body's line ending in a bare LF (documented for trailer lines)"
	}
	if strings.HasPrefix(raw, "PRI * HTTP/2.0\r\n\r\n") {
		return "h2 preface: ContentLength 0, not -1 (reported, conn.go)"
	}
	if strings.HasPrefix(raw, "PRI ") && strings.Contains(strings.ToLower(head), "\nexpect:") {
		return "PRI HTTP/2.0 with Expect: no 100 Continue (reported, conn.go)"
	}
	return ""
}

// TestHostile12RequestEchoMatchesNetHTTP sends each request of the matrix to net/http's
// server and to ours, both serving the same echo handler, and compares the statuses and
// everything the handler saw.
func TestHostile12RequestEchoMatchesNetHTTP(t *testing.T) {
	defer watchdog(t, 120*time.Second)()
	matrix := h12rqMatrix()
	fails := 0
	for _, raw := range matrix {
		if h12rqKnown(raw) != "" {
			continue
		}
		if d := h12rqDiff(t, raw); d != "" {
			fails++
			t.Errorf("request %q:\n%s", raw, d)
		}
	}
	if fails > 0 {
		t.Logf("%d of %d requests differ", fails, len(matrix))
	}
}

// h12rqNetHTTPTable holds requests of net/http's own tests (readrequest_test.go's
// table and serve_test.go's raw requests), replayed against both servers.
var h12rqNetHTTPTable = []string{
	"GET http://www.techcrunch.com/ HTTP/1.1\r\nHost: www.techcrunch.com\r\nUser-Agent: Fake\r\nAccept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\nAccept-Language: en-us,en;q=0.5\r\nAccept-Encoding: gzip,deflate\r\nAccept-Charset: ISO-8859-1,utf-8;q=0.7,*;q=0.7\r\nKeep-Alive: 300\r\nContent-Length: 7\r\nProxy-Connection: keep-alive\r\n\r\nabcdef\n???",
	"GET / HTTP/1.1\r\nHost: foo.com\r\n\r\n",
	"GET //user@host/is/actually/a/path/ HTTP/1.1\r\nHost: test\r\n\r\n",
	"GET ../../../../etc/passwd HTTP/1.1\r\nHost: test\r\n\r\n",
	"GET  HTTP/1.1\r\nHost: test\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: foo.com\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nfoo\r\n3\r\nbar\r\n0\r\nTrailer-Key: Trailer-Value\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: foo.com\r\nTransfer-Encoding: chunked\r\nContent-Length: 6\r\n\r\n3\r\nfoo\r\n3\r\nbar\r\n0\r\n\r\n",
	"CONNECT www.google.com:443 HTTP/1.1\r\n\r\n",
	"CONNECT 127.0.0.1:6060 HTTP/1.1\r\n\r\n",
	"CONNECT /_goRPC_ HTTP/1.1\r\n\r\n",
	"SSH-2.0-Go\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: foo.com\r\nHost: bar.com\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: foo.com\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
	"GET / HTTP/1.1\r\nHost: foo.com\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: foo.com\r\nContent-Length: \r\n\r\n",
	"GET / HTTP/1.1\r\nHost: foo.com\r\nContent-Length: 6\r\nContent-Length: 6\r\n\r\nfoobar",
	"GET / HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 0\r\nHost: foo.com\r\n\r\n",
	"PUT / HTTP/1.1\r\nHost: foo.com\r\nContent-Length: 6 \r\nContent-Length: 6\r\nContent-Length:6\r\n\r\nfoobar",
	"PUT / HTTP/1.1\r\nHost: foo.com\r\nContent-Length: 1\r\nContent-Length: 6 \r\n\r\n",
	"POST / HTTP/1.1\r\nHost: foo.com\r\nContent-Length: 6 \r\nContent-Length: 1,2\r\n\r\n",
	"HEAD / HTTP/1.1\r\nHost: foo.com\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: foo.com\r\nContent-Length: 0\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: foo.com\r\nContent-Length: 0\r\n\r\n",
	"DELETE / HTTP/1.1\r\nHost: foo.com\r\nContent-Length: 0\r\n\r\n",
	"PATCH / HTTP/1.1\r\nHost: foo.com\r\nContent-Length: 0\r\n\r\n",
	"PUT / HTTP/1.1\r\nHost: foo.com\r\n\r\n",
	"GET /\r\nHost: foo.com\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: \xff\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nFoo\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\n\tFoo: bar\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nFoo: \x00\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nFoo : bar\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nFo\x00o: bar\r\n\r\n",
	"GET / HTTP/1.0\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a:80\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: [::1]\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nConnection: close, upgrade\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nExpect: foo-bar\r\nContent-Length: 1\r\n\r\nx",
	"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n1\r\na\r\n0\r\n\r\n",
	"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"GET /foo?bar HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET http://host/foo?bar HTTP/1.1\r\nHost: other\r\n\r\n",
	"GET /%2F HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 10\r\n\r\nkey=v%2Fx\r\n",
}

// TestHostile12RequestEchoNetHTTPTable replays net/http's own test requests.
func TestHostile12RequestEchoNetHTTPTable(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, raw := range h12rqNetHTTPTable {
		if h12rqKnown(raw) != "" {
			continue
		}
		if d := h12rqDiff(t, raw); d != "" {
			t.Errorf("request %q:\n%s", raw, d)
		}
	}
}

// FuzzRequestEcho sends its input as a raw request to both servers (started once per
// fuzz process) and compares the statuses and what the handler saw.
func FuzzRequestEcho(f *testing.F) {
	f.Add("GET /a?b=c HTTP/1.1\r\nHost: h\r\n\r\n")
	f.Add("POST http://u:p@h:1/x%2Fy?q#f HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
	f.Add("POST /te HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n3;e\r\nabc\r\n0\r\nX-T: v\r\n\r\n")
	f.Add("CONNECT h:443 HTTP/1.0\r\nConnection: keep-alive\r\nExpect: 100-continue\r\n\r\n")
	f.Fuzz(func(t *testing.T, raw string) {
		// The known differences are judged on the bytes sent: raw and the pipelined
		// request after it, whose lines become raw's own header lines when raw's head
		// has no end (a fuzzed Connection field then meets the second's "close").
		if len(raw) > 16<<10 || h12rqKnown(raw+h12rqSecond) != "" {
			return
		}
		// What the handler saw and the status of the first response. Whether the
		// connection is kept, and so what follows, is left to the matrix and the tests
		// of the documented differences: the fuzzer's inputs reach the corners of
		// those (a head with no end merging with the pipelined request, 100-continue
		// with no body sent) faster than a predicate can name them.
		std, ours := h12rqAddrs(t)
		sr, serr := h12rqExchange(std, raw)
		or, oerr := h12rqExchange(ours, raw)
		if serr != nil {
			return // net/http failed (a deadline it sat out): nothing to compare
		}
		if oerr != nil {
			t.Fatalf("request %q: ours failed: %v", raw, oerr)
		}
		if len(sr) == 0 || len(or) == 0 {
			if len(sr) != len(or) {
				t.Fatalf("request %q: net/http answered %d responses, ours %d", raw, len(sr), len(or))
			}
			return
		}
		s0, o0 := sr[0], or[0]
		s0.close, o0.close = false, false
		if d := h12rqCompare([]h12rqResp{s0}, []h12rqResp{o0}); d != "" {
			t.Fatalf("request %q:\n%s", raw, d)
		}
	})
}

// h12rqOne sends raw to addr and returns the first response, failing the test if there
// is none.
func h12rqOne(t *testing.T, addr, raw string) h12rqResp {
	t.Helper()
	rs, err := h12rqExchange(addr, raw)
	if err != nil || len(rs) == 0 {
		t.Fatalf("%s: %q: responses %v, error %v", addr, raw, rs, err)
	}
	return rs[0]
}

// h12rqLine returns the line of an echo that starts with prefix.
func h12rqLine(echo, prefix string) string {
	for _, l := range strings.Split(echo, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return "(no " + prefix + " line)"
}

// TestHostile12RequestBodyCloseRepeatsChunkError: once a read of a chunked body has
// failed on its framing, net/http's Request.Body.Close returns that error again (its
// chunked reader's error is sticky and Close drains through it); a handler checking
// Close's error must learn the same here.
func TestHostile12RequestBodyCloseRepeatsChunkError(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	std, ours := h12rqAddrs(t)
	for _, body := range []string{"zz\r\n", "3\r\nabcX\r\n0\r\n\r\n", "3\nabc\n0\n\n", "-1\r\n\r\n"} {
		raw := "POST /close HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" + body
		s, o := h12rqOne(t, std, raw), h12rqOne(t, ours, raw)
		if sl, ol := h12rqLine(s.echo, "Body.Close="), h12rqLine(o.echo, "Body.Close="); sl != ol || sl != "Body.Close=error" {
			t.Errorf("%q: net/http %s, ours %s", body, sl, ol)
		}
	}
	// A Content-Length body cut short by the client's end, a broken trailer section:
	// net/http's Close says nil.
	for _, raw := range []string{
		"POST /close HTTP/1.1\r\nHost: h\r\nContent-Length: 9\r\n\r\nabc",
		"POST /close HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nbad line\r\n\r\n",
	} {
		s, o := h12rqOne(t, std, raw), h12rqOne(t, ours, raw)
		if sl, ol := h12rqLine(s.echo, "Body.Close="), h12rqLine(o.echo, "Body.Close="); sl != ol || sl != "Body.Close=nil" {
			t.Errorf("%q: net/http %s, ours %s", raw, sl, ol)
		}
	}
}

// h12rqH2C mimics golang.org/x/net/http2/h2c's prior-knowledge path: it recognises the
// HTTP/2 connection preface as net/http hands it to a handler, hijacks the connection
// and reads the preface's rest ("SM\r\n\r\n") from the hijacked reader.
func h12rqH2C(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/second" {
		io.WriteString(w, "2")
		return
	}
	if r.Method != "PRI" || len(r.Header) != 0 || r.URL.Path != "*" || r.Proto != "HTTP/2.0" {
		http.Error(w, "not a preface", http.StatusTeapot)
		return
	}
	c, rw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	rest := make([]byte, 6)
	if _, err := io.ReadFull(rw, rest); err != nil {
		return
	}
	fmt.Fprintf(c, "h2c:%q close=%v", rest, r.Close)
}

// TestHostile12RequestH2PrefaceReachesHandler: net/http passes "PRI * HTTP/2.0" to the
// handler (http1ServerSupportsRequest) so that a handler can take HTTP/2 over over
// cleartext with prior knowledge, as x/net/http2/h2c.NewHandler does; this server
// answered 505.
func TestHostile12RequestH2PrefaceReachesHandler(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	h := http.HandlerFunc(h12rqH2C)
	stdAddr := h4StartNetHTTP(t, h)
	ts := start(t, blitzio.BackendEpoll, &Server{Handler: h, ErrorLog: discardLog()})
	const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	want := `h2c:"SM\r\n\r\n" close=true`
	for _, addr := range []string{stdAddr, ts.addr} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, preface)
		got, err := io.ReadAll(c)
		c.Close()
		if string(got) != want {
			t.Errorf("%s: got %q (%v), want %q", addr, got, err, want)
		}
	}
	// And the rest of the preface rules, as net/http: HTTP/2.0 only with PRI and "*",
	// a Host (or another field) makes it an ordinary request, which then needs a Host.
	for _, raw := range []string{
		"PRI * HTTP/2.0\r\nHost: h\r\n\r\n", "PRI * HTTP/2.0\r\nX: y\r\n\r\n", "PRI / HTTP/2.0\r\n\r\n",
		"GET * HTTP/2.0\r\n\r\n", "PRI * HTTP/2.1\r\n\r\n", "PRI * HTTP/1.1\r\nHost: h\r\n\r\n",
		"PRI * HTTP/2.0\r\nHost: h\r\nContent-Length: 2\r\n\r\nab",
		"PRI * HTTP/2.0\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n",
		"PRI * HTTP/2.0\r\nHost: h\r\nConnection: close\r\n\r\n",
		"PRI * HTTP/2.0\r\nHost: h\r\n\r\n",
	} {
		if d := h12rqDiff(t, raw); d != "" {
			t.Errorf("request %q:\n%s", raw, d)
		}
	}
}

// TestHostile12RequestH2PrefaceContentLength: net/http gives the preface request
// ContentLength -1 ("neither chunked nor declared"), with http.NoBody.
func TestHostile12RequestH2PrefaceContentLength(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	std, ours := h12rqAddrs(t)
	raw := "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	s, o := h12rqOne(t, std, raw), h12rqOne(t, ours, raw)
	if d := h12rqCompare([]h12rqResp{s}, []h12rqResp{o}); d != "" {
		t.Errorf("request %q:\n%s", raw, d)
	}
}

// TestHostile12RequestExpectFailed10StatusLine: the 417 to an HTTP/1.0 request is an
// HTTP/1.0 response from net/http (sendExpectationFailed goes through the response
// writer), with a Date.
func TestHostile12RequestExpectFailed10StatusLine(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	std, ours := h12rqAddrs(t)
	raw := "POST /expect HTTP/1.0\r\nExpect: x\r\nContent-Length: 3\r\n\r\nabc"
	s, o := h12rqOne(t, std, raw), h12rqOne(t, ours, raw)
	if s.status != 417 || s.proto != o.proto || s.status != o.status {
		t.Errorf("net/http %s %d, ours %s %d", s.proto, s.status, o.proto, o.status)
	}
}

// TestHostile12RequestHTTP10KeepAliveAndClose: an HTTP/1.0 request whose Connection
// field names both keep-alive and close. Both servers hand the handler Close=true;
// net/http then keeps the connection (its keep-alive rule for HTTP/1.0 looks at
// keep-alive only) and says "Connection: keep-alive". RFC 9112 section 9.3 says the
// connection does not persist when close is present: this server closes it
// (documented).
func TestHostile12RequestHTTP10KeepAliveAndClose(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	std, ours := h12rqAddrs(t)
	for _, conn := range []string{"keep-alive, close", "close, keep-alive", "keep-alive\r\nConnection: close"} {
		raw := "GET /ka HTTP/1.0\r\nConnection: " + conn + "\r\n\r\n"
		sr, serr := h12rqExchange(std, raw)
		or, oerr := h12rqExchange(ours, raw)
		if serr != nil || oerr != nil || len(sr) == 0 || len(or) == 0 {
			t.Fatalf("%q: net/http %v %v, ours %v %v", conn, sr, serr, or, oerr)
		}
		if sr[0].echo != or[0].echo || !strings.Contains(or[0].echo, " Close=true ") {
			t.Errorf("%q: the handler saw different requests:\n%s", conn, h12rqCompare(sr[:1], or[:1]))
		}
		if len(or) != 1 || !or[0].close {
			t.Errorf("%q: ours answered %d responses, the first close=%v; want the connection closed after the first", conn, len(or), or[0].close)
		}
	}
}

// TestHostile12RequestHTTP10KeepAliveRule: the connection of an HTTP/1.0 request
// persists exactly when the handler's Request.Close is false (documented), where
// net/http's own keep-alive test disagrees with its Request.Close.
func TestHostile12RequestHTTP10KeepAliveRule(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	_, ours := h12rqAddrs(t)
	for _, conn := range []string{"keep-alive 0", "x keep-alive", "x\r\nConnection: keep-alive", "keep-alive", "close", "x"} {
		raw := "GET /ka HTTP/1.0\r\nConnection: " + conn + "\r\n\r\n"
		or, err := h12rqExchange(ours, raw)
		if err != nil || len(or) == 0 {
			t.Fatalf("%q: %v %v", conn, or, err)
		}
		closed := strings.Contains(or[0].echo, " Close=true ")
		if kept := len(or) == 2 && or[1].body == "2"; kept == closed || or[0].close != closed {
			t.Errorf("%q: Request.Close=%v, yet the connection answered %d responses (the first says close=%v)", conn, closed, len(or), or[0].close)
		}
	}
}
