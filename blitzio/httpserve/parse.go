package httpserve

import (
	"bytes"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
)

// parseError is a request the server refuses before any handler sees it: the status
// to answer with and the text after the status line's reason, like net/http's.
type parseError struct {
	code int
	text string // "" for a bare "400 Bad Request"
}

func (e *parseError) Error() string {
	if e.text == "" {
		return strconv.Itoa(e.code) + " " + http.StatusText(e.code)
	}
	return strconv.Itoa(e.code) + " " + http.StatusText(e.code) + ": " + e.text
}

var (
	errBadRequest      = &parseError{code: http.StatusBadRequest}
	errHeaderTooLarge  = &parseError{code: http.StatusRequestHeaderFieldsTooLarge}
	errVersion         = &parseError{code: http.StatusHTTPVersionNotSupported, text: "unsupported protocol version"}
	errUnsupportedTE   = &parseError{code: http.StatusNotImplemented}
	errMissingHost     = &parseError{code: http.StatusBadRequest, text: "missing required Host header"}
	errMalformedHost   = &parseError{code: http.StatusBadRequest, text: "malformed Host header"}
	errBadHeaderName   = &parseError{code: http.StatusBadRequest, text: "invalid header name"}
	errBadHeaderValue  = &parseError{code: http.StatusBadRequest, text: "invalid header value"}
	errBodyTooLarge    = &parseError{code: http.StatusRequestEntityTooLarge}
	errExpectationFail = &parseError{code: http.StatusExpectationFailed}
	// errExpectationFail10 is errExpectationFail for an HTTP/1.0 request, answered
	// in its version.
	errExpectationFail10 = &parseError{code: http.StatusExpectationFailed}
)

// headEnd returns the length of the request head at the start of b (request line,
// header lines and the empty line that ends them, with CRLF or bare LF line ends, as
// net/textproto accepts), or 0 when b does not hold a whole head yet.
func headEnd(b []byte) int {
	i := 0
	for {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return 0
		}
		i += j + 1
		// An empty line: "\n" or "\r\n" right after the previous line's end.
		if i < len(b) && b[i] == '\n' {
			return i + 1
		}
		if i+1 < len(b) && b[i] == '\r' && b[i+1] == '\n' {
			return i + 2
		}
		if i >= len(b)-1 && (i == len(b) || b[i] == '\r') {
			return 0 // the next line has not arrived: cannot tell yet
		}
	}
}

// parsedRequest is a parsed request head: the fields of the http.Request the server
// builds, plus what the server itself needs.
type parsedRequest struct {
	method, uri, proto string
	major, minor       int
	url                *url.URL
	urlStore           *url.URL // where the fast path builds url (the request's bundle); nil: a new one
	header             http.Header
	host               string
	trailer            http.Header // the declared trailer fields (nil values), or nil
	// The response's declared trailer names (see response.sendHead).
	respTrailer []string
	// snap is the response header's fields as WriteHeader saw them; its storage is
	// kept from request to request (see putParsed).
	snap             []hdrField
	contentLength    int64 // -1 with chunked
	chunked          bool
	close            bool
	wants10KeepAlive bool
	expectContinue   bool
}

// hdrField is one field of a response's header map: its key and values.
type hdrField struct {
	k string
	v []string
}

// internedMethods are returned instead of substrings of the request, so a method
// string keeps no request head alive.
var internedMethods = [...]string{"GET", "POST", "PUT", "HEAD", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"}

func internMethod(m string) string {
	for _, s := range internedMethods {
		if s == m {
			return s
		}
	}
	return m
}

// parseHead parses a whole request head (head is what headEnd measured, as one string
// whose substrings become the request's strings: one allocation for all of them). The
// checks are those of net/http's ReadRequest followed by its server's own checks, so a
// request is refused with the status net/http's server answers it with; the deliberate
// differences are listed in the package documentation (obs-fold continuation lines are
// refused with 400).
func parseHead(head string, p *parsedRequest, vals []string) *parseError {
	line, rest := cutLine(head)
	method, r1, ok1 := strings.Cut(line, " ")
	uri, proto, ok2 := strings.Cut(r1, " ")
	if !ok1 || !ok2 || !validMethod(method) {
		return errBadRequest
	}
	p.method, p.uri = internMethod(method), uri
	switch proto {
	case "HTTP/1.1":
		p.proto, p.major, p.minor = "HTTP/1.1", 1, 1
	case "HTTP/1.0":
		p.proto, p.major, p.minor = "HTTP/1.0", 1, 0
	default:
		maj, min, ok := http.ParseHTTPVersion(proto)
		if !ok {
			return errBadRequest
		}
		p.proto, p.major, p.minor = proto, maj, min
	}
	if err := parseURI(p); err != nil {
		return err
	}

	// Header lines.
	h := p.header
	first := true
	hostCount, hostVal := 0, ""
	for {
		var l string
		l, rest = cutLine(rest)
		if l == "" {
			break
		}
		if l[0] == ' ' || l[0] == '\t' {
			// An initial line starting with white space is malformed for net/textproto
			// too; a later one is an obs-fold continuation, which we refuse (RFC 9112
			// section 5.2 allows a server to answer it with 400).
			_ = first
			return errBadRequest
		}
		first = false
		k, v, ok := strings.Cut(l, ":")
		if !ok || k == "" {
			return errBadRequest
		}
		key, ok := canonicalKey(k)
		if !ok {
			return errBadRequest
		}
		for i := 0; i < len(v); i++ {
			if !validValueByte(v[i]) {
				return errBadRequest
			}
		}
		v = trimOWS(v)
		if key == "Host" {
			// Kept out of the map (the server deletes it anyway): a request with no other
			// header then allocates no map storage.
			if hostCount == 0 {
				hostVal = v
			}
			hostCount++
			continue
		}
		if vv, ok := h[key]; ok {
			h[key] = append(vv, v)
		} else if len(vals) > 0 {
			vv, vals = vals[:1:1], vals[1:]
			vv[0] = v
			h[key] = vv
		} else {
			h[key] = []string{v}
		}
	}

	if hostCount > 1 {
		return errBadRequest // "too many Host headers"
	}
	p.host = p.url.Host
	if p.host == "" {
		p.host = hostVal
	}
	if hp, ok := h["Pragma"]; ok && len(hp) > 0 && hp[0] == "no-cache" {
		if _, ok := h["Cache-Control"]; !ok {
			h["Cache-Control"] = []string{"no-cache"}
		}
	}
	conn := h["Connection"]
	hasClose := headerHasToken(conn, "close")
	if p.major == 1 && p.minor == 0 {
		p.wants10KeepAlive = headerHasToken(conn, "keep-alive")
		p.close = hasClose || !p.wants10KeepAlive
	} else {
		p.close = hasClose
	}

	// Transfer-Encoding and Content-Length, as net/http's readTransfer, which reads the
	// body of a request that says HTTP/0.0 as HTTP/1.1's: an unknown transfer coding in
	// one is refused with 501 before the server's version check answers 505.
	if te, ok := h["Transfer-Encoding"]; ok {
		delete(h, "Transfer-Encoding")
		major, minor := p.major, p.minor
		if major == 0 && minor == 0 {
			major, minor = 1, 1
		}
		if major > 1 || major == 1 && minor >= 1 {
			if len(te) != 1 || !strings.EqualFold(te[0], "chunked") {
				return errUnsupportedTE
			}
			p.chunked = true
		}
	}
	cls := h["Content-Length"]
	if len(cls) > 1 {
		first := textproto.TrimString(cls[0])
		for _, c := range cls[1:] {
			if textproto.TrimString(c) != first {
				return errBadRequest
			}
		}
		h["Content-Length"] = []string{first}
		cls = h["Content-Length"]
	}
	var n int64
	if len(cls) > 0 {
		cl := textproto.TrimString(cls[0])
		if cl == "" {
			return errBadRequest
		}
		v, err := strconv.ParseUint(cl, 10, 63)
		if err != nil {
			return errBadRequest
		}
		n = int64(v)
	}
	switch {
	case p.chunked:
		delete(h, "Content-Length")
		p.contentLength = -1
	case len(cls) > 0:
		p.contentLength = n
	default:
		p.contentLength = 0
	}

	// The trailer fields the client declares, as net/http's fixTrailer: only with a
	// chunked body (else the field stays, unused), taken out of the header, and a
	// declared Transfer-Encoding, Trailer or Content-Length refuses the request.
	if vv, ok := h["Trailer"]; ok && p.chunked {
		delete(h, "Trailer")
		var tr http.Header
		for _, v := range vv {
			for key := range strings.SplitSeq(v, ",") {
				if key = textproto.TrimString(key); key == "" {
					continue
				}
				key = http.CanonicalHeaderKey(key)
				switch key {
				case "Transfer-Encoding", "Trailer", "Content-Length":
					return errBadRequest
				}
				if tr == nil {
					tr = make(http.Header)
				}
				tr[key] = nil
			}
		}
		p.trailer = tr
	}

	// The server's own checks (net/http's conn.readRequest).
	//
	// "PRI * HTTP/2.0" is let through, as net/http's http1ServerSupportsRequest does:
	// that is how the HTTP/2 connection preface reaches a handler, so that one can take
	// the connection over for cleartext HTTP/2 with prior knowledge (what
	// x/net/http2/h2c's handler does, by hijacking). The bare preface, with no field at
	// all, is "the h2 upgrade": no Host is needed and the connection is not reused
	// after it, unless hijacked.
	h2Preface := p.major == 2 && p.minor == 0 && p.method == "PRI" && p.uri == "*"
	if p.major != 1 && !h2Preface {
		return errVersion
	}
	h2Upgrade := h2Preface && len(h) == 0 && hostCount == 0
	if h2Upgrade {
		// As net/http: no body is declared and none is read (ContentLength -1 with
		// http.NoBody); the connection is not reused.
		p.close = true
		p.contentLength = -1
	}
	if (p.major > 1 || p.minor >= 1) && hostCount == 0 && p.method != "CONNECT" && !h2Upgrade {
		return errMissingHost
	}
	if hostCount == 1 && !validHostHeader(hostVal) {
		return errMalformedHost
	}
	if len(h) > 0 { // a request with no header but Host: no map iteration to start
		for k, vv := range h {
			if !validFieldName(k) {
				return errBadHeaderName
			}
			for _, v := range vv {
				if !validFieldValue(v) {
					return errBadHeaderValue
				}
			}
		}
	}
	if ex, ok := h["Expect"]; ok && len(ex) > 0 && ex[0] != "" {
		// As net/http: 100-continue as a token of the first Expect line ("100-continue,
		// x-foo" included) is honoured; any other expectation gets 417.
		if !hasToken(ex[0], "100-continue") {
			if p.major == 1 && p.minor == 0 {
				return errExpectationFail10
			}
			return errExpectationFail
		}
		p.expectContinue = true
	}
	return nil
}

// cutLine splits s after its first line, dropping the line end (LF or CRLF).
func cutLine(s string) (line, rest string) {
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return s, ""
	}
	line, rest = s[:i], s[i+1:]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, rest
}

// parseURI sets p.url from p.uri as net/http does, with a fast path for the common
// origin form of plain path characters, which url.ParseRequestURI would parse to the
// same URL (only Path, and RawQuery after a '?').
func parseURI(p *parsedRequest) *parseError {
	raw := p.uri
	if len(raw) > 0 && raw[0] == '/' && p.method != "CONNECT" {
		path, query, hasQ := strings.Cut(raw, "?")
		if plainPath(path) && plainQuery(query) && !(hasQ && query == "") {
			if p.urlStore == nil {
				p.urlStore = new(url.URL)
			}
			*p.urlStore = url.URL{Path: path, RawQuery: query}
			p.url = p.urlStore
			return nil
		}
	}
	justAuthority := p.method == "CONNECT" && !strings.HasPrefix(raw, "/")
	if justAuthority {
		raw = "http://" + raw
	}
	u, err := url.ParseRequestURI(raw)
	if err != nil {
		return errBadRequest
	}
	if justAuthority {
		u.Scheme = ""
	}
	p.url = u
	return nil
}

// plainPath reports whether path has only bytes that url's path escaping leaves as
// they are and no '%' (so Path is the path as sent, RawPath empty).
func plainPath(path string) bool {
	if len(path) > 1 && path[1] == '/' {
		return false // "//x": leave the authority question to net/url
	}
	for i := 0; i < len(path); i++ {
		c := path[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			continue
		}
		switch c {
		case '/', '-', '.', '_', '~':
			continue
		}
		return false
	}
	return true
}

func plainQuery(q string) bool {
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c <= ' ' || c >= 0x7f || c == '#' {
			return false
		}
	}
	return true
}

// validMethod reports whether m is a token (RFC 7230), as net/http requires.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		if !isTokenByte(m[i]) {
			return false
		}
	}
	return true
}

func isTokenByte(c byte) bool {
	return c < 0x80 && tokenTable[c]
}

var tokenTable = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// canonicalKey is net/textproto's canonicalMIMEHeaderKey: a key with a byte outside
// the token set is malformed, except spaces, which make it non-canonical (and then
// refused by the server's field-name check, as by net/http's).
func canonicalKey(k string) (string, bool) {
	canonical := true
	upper := true
	noCanon := false
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !isTokenByte(c) {
			if c == ' ' {
				noCanon = true // kept as is; validFieldName refuses it afterwards
				continue
			}
			return "", false
		}
		if upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z' {
			canonical = false
		}
		upper = c == '-'
	}
	if noCanon {
		return k, true
	}
	if canonical {
		if s := commonKey(k); s != "" {
			return s, true
		}
		return k, true
	}
	return textproto.CanonicalMIMEHeaderKey(k), true
}

// commonHeaderKeys are interned so that a key string holds no reference into the
// request head.
var commonHeaderKeys = [...]string{"Host", "User-Agent", "Accept", "Accept-Encoding", "Accept-Language",
	"Connection", "Content-Length", "Content-Type", "Cookie", "Authorization", "Cache-Control",
	"Referer", "Origin", "Upgrade-Insecure-Requests", "If-None-Match", "If-Modified-Since",
	"Transfer-Encoding", "Expect", "X-Forwarded-For", "Pragma"}

func commonKey(k string) string {
	for _, s := range commonHeaderKeys {
		if s == k {
			return s
		}
	}
	return ""
}

// validValueByte is net/textproto's: VCHAR, SP, HTAB and obs-text.
func validValueByte(c byte) bool {
	return c >= 0x80 || c == '\t' || (c >= 0x20 && c != 0x7f)
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// validFieldName is httpguts.ValidHeaderFieldName: a non-empty token.
func validFieldName(k string) bool { return validMethod(k) }

// validFieldValue is httpguts.ValidHeaderFieldValue: no control bytes but HTAB.
func validFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x80 && (c < 0x20 && c != '\t' || c == 0x7f) {
			return false
		}
	}
	return true
}

// validHostHeader is httpguts.ValidHostHeader: the bytes a Host header may have.
func validHostHeader(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c >= 0x80 || !hostTable[c] {
			return false
		}
	}
	return true
}

var hostTable = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!$%&'()*+,-.:;=[]_~" {
		t[c] = true
	}
	return t
}()

// headerHasToken reports whether a comma-separated header value list holds token,
// case-insensitively (httpguts.HeaderValuesContainsToken).
// hasToken reports whether token (ASCII) is one of the words of v separated by
// spaces, tabs or commas, ignoring case: net/http's test for Expect and Connection.
func hasToken(v, token string) bool {
	for v != "" {
		i := strings.IndexAny(v, " ,\t")
		word := v
		if i >= 0 {
			word, v = v[:i], v[i+1:]
		} else {
			v = ""
		}
		if len(word) == len(token) && strings.EqualFold(word, token) {
			return true
		}
	}
	return false
}

func headerHasToken(vals []string, token string) bool {
	for _, v := range vals {
		for v != "" {
			var part string
			part, v, _ = strings.Cut(v, ",")
			if strings.EqualFold(trimOWS(part), token) {
				return true
			}
		}
	}
	return false
}
