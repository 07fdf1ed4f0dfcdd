package httpserve

import (
	"bufio"
	"bytes"
	"net/http"
	"net/textproto"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseRequest compares the parser's decision on a request head with net/http's:
// http.ReadRequest followed by the checks net/http's server makes before calling a
// handler (protocol version, Host, header names and values, Expect). For a request both
// accept it compares method, URL, protocol, headers, Host, Content-Length, chunked and
// close. The deliberate differences, skipped here:
//   - obs-fold continuation lines: net/textproto joins them, this parser refuses them
//     with 400 (RFC 9112 section 5.2 allows either);
//   - a request whose head net/http reads with trailing garbage after a bare CR: the
//     two readers split such lines alike but net/http reports some as EOF.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /a/b?c=d&e HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\nAccept: */*\r\n\r\n",
		"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
		"POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET http://example.com/x HTTP/1.1\r\nHost: other\r\n\r\n",
		"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
		"GET /%41 HTTP/1.1\r\nHost: x\r\nx-lower: v\r\nPragma: no-cache\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
		"GET / HTTP/1.1\nHost: x\n\n",
		"GET / HTTP/2.0\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n := headEnd(data)
		if n == 0 {
			return // not a whole head: nothing to decide yet
		}
		head := data[:n]
		if bytes.Contains(head, []byte("\n ")) || bytes.Contains(head, []byte("\n\t")) {
			return // obs-fold: a deliberate difference
		}
		var p parsedRequest
		p.header = http.Header{}
		perr := parseHead(string(head), &p, nil)

		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		var want *parseError
		if err != nil {
			if strings.Contains(err.Error(), "transfer encoding") {
				want = errUnsupportedTE
			} else {
				want = errBadRequest
			}
		} else {
			want = serverChecks(req, head)
		}
		if (perr == nil) != (want == nil) {
			t.Fatalf("head %q: ours %v, net/http's %v (ReadRequest error %v)", head, perr, want, err)
		}
		if perr != nil {
			if perr.code != want.code {
				t.Fatalf("head %q: ours %v, net/http's %v", head, perr, want)
			}
			return
		}
		delete(req.Header, "Host")
		if p.method != req.Method || p.uri != req.RequestURI || p.proto != req.Proto ||
			p.major != req.ProtoMajor || p.minor != req.ProtoMinor || p.host != req.Host ||
			p.contentLength != req.ContentLength || p.chunked != (len(req.TransferEncoding) > 0) || p.close != req.Close {
			t.Fatalf("head %q: ours %+v, net/http's %s %s %s host %q CL %d TE %v close %v", head, p,
				req.Method, req.RequestURI, req.Proto, req.Host, req.ContentLength, req.TransferEncoding, req.Close)
		}
		if !reflect.DeepEqual(p.url, req.URL) {
			t.Fatalf("head %q: URL ours %#v, net/http's %#v", head, p.url, req.URL)
		}
		if !reflect.DeepEqual(p.header, req.Header) {
			t.Fatalf("head %q: header ours %v, net/http's %v", head, p.header, req.Header)
		}
	})
}

// serverChecks is what net/http's server checks after ReadRequest, with the status it
// answers.
func serverChecks(req *http.Request, head []byte) *parseError {
	// The HTTP/2 preface line reaches the handler (http1ServerSupportsRequest).
	h2Preface := req.ProtoMajor == 2 && req.ProtoMinor == 0 && req.Method == "PRI" && req.RequestURI == "*"
	if req.ProtoMajor != 1 && !h2Preface {
		return errVersion
	}
	// ReadRequest drops the Host header; the server looks at it before that, so read
	// the header block again for it.
	_, rest, _ := bytes.Cut(head, []byte("\n"))
	mh, _ := textproto.NewReader(bufio.NewReader(bytes.NewReader(rest))).ReadMIMEHeader()
	hosts, haveHost := mh["Host"]
	// The bare preface (no field at all: isH2Upgrade) needs no Host.
	h2Upgrade := h2Preface && len(mh) == 0
	if req.ProtoAtLeast(1, 1) && (!haveHost || len(hosts) == 0) && req.Method != "CONNECT" && !h2Upgrade {
		return errMissingHost
	}
	if len(hosts) == 1 && !validHostHeader(hosts[0]) {
		return errMalformedHost
	}
	for k, vv := range req.Header {
		if !validFieldName(k) {
			return errBadHeaderName
		}
		for _, v := range vv {
			if !validFieldValue(v) {
				return errBadHeaderValue
			}
		}
	}
	if ex := req.Header.Get("Expect"); ex != "" && !netHTTPHasToken(ex, "100-continue") {
		return errExpectationFail
	}
	return nil
}

// netHTTPHasToken is net/http's test of Expect for 100-continue, written out the way it
// does it (by position, not by splitting as the server's hasToken does, so the two are
// checked against each other): token occurs, ignoring ASCII case, between the start or
// a space, comma or tab and the end or another of those.
func netHTTPHasToken(v, token string) bool {
	boundary := func(b byte) bool { return b == ' ' || b == ',' || b == '\t' }
	for sp := 0; sp+len(token) <= len(v); sp++ {
		if sp > 0 && !boundary(v[sp-1]) {
			continue
		}
		if end := sp + len(token); end != len(v) && !boundary(v[end]) {
			continue
		}
		if strings.EqualFold(v[sp:sp+len(token)], token) {
			return true
		}
	}
	return false
}
