package netload

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HTTPRequest is one request of an HTTP load and the response it must get.
type HTTPRequest struct {
	Path   string // request target, e.g. "/plaintext"
	Status int    // the status code the response must have
	// Body is the body the response must have; nil leaves the body unchecked (it is
	// still read, whatever its framing).
	Body []byte
}

// Plaintext is the request of the plaintext test: GET /plaintext answered by 200 and
// "Hello, World!".
var Plaintext = HTTPRequest{Path: PlaintextPath, Status: 200, Body: []byte(PlaintextBody)}

// HTTPConfig shapes an HTTP load.
type HTTPConfig struct {
	Conns int // keep-alive connections, each driven by its own goroutine; > 0
	// Pipeline is how many requests are written at once, in one write, before their
	// responses are read in order (1 means no pipelining; 0 means 1).
	Pipeline int
	// Requests is the sequence each connection sends, cycled; empty means Plaintext
	// only. Mixing paths with different answers lets a check see that pipelined
	// responses come back in the order of their requests.
	Requests []HTTPRequest
	// Host is the Host header (default "x").
	Host string
	// Timeout bounds the dials and each Run (DefaultTimeout if zero).
	Timeout time.Duration
}

// HTTPClient drives HTTP/1.1 keep-alive connections with pipelining over raw sockets:
// it writes Pipeline GET requests at once, then parses that many responses (status
// line, headers, a Content-Length or chunked body), checks each against the request it
// answers, and repeats. It never follows redirects or reconnects: a server that closes
// a connection fails the run.
type HTTPClient struct {
	cfg   HTTPConfig
	reqs  [][]byte // the rendered requests, in cfg.Requests order
	conns []*net.TCPConn
	rd    []*bufio.Reader
	wbuf  [][]byte
	body  [][]byte
	next  []int // per connection: index of its next request in the cycle
	mu    sync.Mutex
	bad   bool
}

// DialHTTP opens cfg.Conns keep-alive connections to the HTTP server at addr.
func DialHTTP(ctx context.Context, addr string, cfg HTTPConfig) (*HTTPClient, error) {
	if cfg.Conns <= 0 || cfg.Conns > MaxConns || cfg.Pipeline < 0 || cfg.Pipeline > MaxPipeline {
		return nil, fmt.Errorf("netload: DialHTTP: Conns %d must be within [1, %d] and Pipeline %d within [0, %d]", cfg.Conns, MaxConns, cfg.Pipeline, MaxPipeline)
	}
	if cfg.Pipeline == 0 {
		cfg.Pipeline = 1
	}
	if len(cfg.Requests) == 0 {
		cfg.Requests = []HTTPRequest{Plaintext}
	}
	if cfg.Host == "" {
		cfg.Host = "x"
	}
	c := &HTTPClient{cfg: cfg}
	for _, r := range cfg.Requests {
		if r.Path == "" || r.Path[0] != '/' || strings.ContainsFunc(r.Path, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
			return nil, fmt.Errorf("netload: DialHTTP: request path %q is not an origin-form target", r.Path)
		}
		c.reqs = append(c.reqs, []byte("GET "+r.Path+" HTTP/1.1\r\nHost: "+cfg.Host+"\r\n\r\n"))
	}
	conns, err := dialAll(ctx, addr, cfg.Conns, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	c.conns = conns
	c.rd = make([]*bufio.Reader, len(conns))
	c.wbuf = make([][]byte, len(conns))
	c.body = make([][]byte, len(conns))
	c.next = make([]int, len(conns))
	for i, cn := range conns {
		c.rd[i] = bufio.NewReaderSize(cn, 8192)
		c.next[i] = i % len(c.reqs) // connections start at different points of the cycle
	}
	return c, nil
}

// Run makes every connection send perConn requests (in batches of Pipeline, the last
// batch possibly shorter) and read their responses, all connections at once. Result.Ops
// counts responses, Result.Bytes their body bytes.
func (c *HTTPClient) Run(ctx context.Context, perConn int) (Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bad || c.conns == nil {
		return Result{}, ErrClosed
	}
	if perConn <= 0 {
		return Result{}, fmt.Errorf("netload: HTTPClient.Run: perConn %d, want > 0", perConn)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	release, err := bindConns(ctx, c.conns, runDeadline(ctx, c.cfg.Timeout))
	defer release()
	if err != nil {
		c.bad = true
		return Result{}, err
	}
	var mu sync.Mutex
	var total Result
	var errs errList
	var wg sync.WaitGroup
	start := time.Now()
	wg.Add(len(c.conns))
	for i := range c.conns {
		go func() {
			defer wg.Done()
			r, err := c.requests(i, perConn)
			mu.Lock()
			total.add(r)
			mu.Unlock()
			if err != nil {
				errs.add(fmt.Errorf("netload: http conn %d: %w", i, ctxErr(ctx, err)))
			}
		}()
	}
	wg.Wait()
	total.Elapsed = time.Since(start)
	if err := errs.err(); err != nil {
		c.bad = true
		return total, err
	}
	return total, nil
}

func (c *HTTPClient) requests(i, n int) (Result, error) {
	var r Result
	conn, rd := c.conns[i], c.rd[i]
	for sent := 0; sent < n; {
		batch := min(c.cfg.Pipeline, n-sent)
		w := c.wbuf[i][:0]
		first := c.next[i]
		for k := range batch {
			w = append(w, c.reqs[(first+k)%len(c.reqs)]...)
		}
		c.wbuf[i] = w
		if _, err := conn.Write(w); err != nil {
			return r, err
		}
		for k := range batch {
			want := c.cfg.Requests[(first+k)%len(c.reqs)]
			status, body, err := ReadResponse(rd, c.body[i][:0])
			c.body[i] = body
			if err != nil {
				return r, fmt.Errorf("response %d: %w", sent+k+1, err)
			}
			if status != want.Status || (want.Body != nil && !bytes.Equal(body, want.Body)) {
				return r, fmt.Errorf("%w: response %d (to GET %s): status %d, body %q; want %d, %q",
					ErrBadResponse, sent+k+1, want.Path, status, truncate(body), want.Status, truncate(want.Body))
			}
			r.Ops++
			r.Bytes += int64(len(body))
		}
		c.next[i] = (first + batch) % len(c.reqs)
		sent += batch
	}
	return r, nil
}

func truncate(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// Close closes every connection; it waits for a Run in progress to end. It is safe to
// call more than once.
func (c *HTTPClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := closeAll(c.conns)
	c.conns = nil
	return err
}

// Limits of ReadResponse: a response beyond them is an ErrBadResponse rather than an
// unbounded allocation.
const (
	maxHeaderLines = 100
	maxBodyBytes   = 1 << 20
)

// ReadResponse reads one HTTP/1.x response from rd and appends its body to body (pass a
// reused buffer to read without allocating). It understands a Content-Length body, a
// chunked body (extensions and trailers skipped), and no body for 1xx, 204 and 304
// responses; informational 1xx responses are skipped and the final response returned.
// A response without a length, or that announces Connection: close, is an error: on a
// keep-alive benchmark connection it means the server is closing it. Malformed input
// fails with an error wrapping ErrBadResponse; a read error is returned as is
// (io.ErrUnexpectedEOF for a response cut short).
func ReadResponse(rd *bufio.Reader, body []byte) (status int, _ []byte, err error) {
	for {
		status, length, chunked, err := readHead(rd)
		if err != nil {
			return 0, body, err
		}
		switch {
		case status >= 100 && status < 200:
			continue
		case status == 204 || status == 304:
			return status, body, nil
		case chunked:
			body, err = readChunked(rd, body)
			return status, body, err
		case length >= 0:
			if length > maxBodyBytes {
				return status, body, fmt.Errorf("%w: Content-Length %d above %d", ErrBadResponse, length, maxBodyBytes)
			}
			start := len(body)
			body = grow(body, int(length))
			if _, err := io.ReadFull(rd, body[start:]); err != nil {
				return status, body[:start], unexpected(err)
			}
			return status, body, nil
		default:
			return status, body, fmt.Errorf("%w: status %d without Content-Length or chunked body on a keep-alive connection", ErrBadResponse, status)
		}
	}
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readLine returns the next CRLF-terminated line without its CRLF; the slice is valid
// until the next read from rd.
func readLine(rd *bufio.Reader) ([]byte, error) {
	line, err := rd.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, fmt.Errorf("%w: line longer than %d bytes", ErrBadResponse, rd.Size())
	}
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line %q not ended by CRLF", ErrBadResponse, line)
	}
	return line[:len(line)-2], nil
}

// readHead parses the status line and headers. length is -1 when no Content-Length
// was given.
func readHead(rd *bufio.Reader) (status int, length int64, chunked bool, err error) {
	line, err := readLine(rd)
	if err != nil {
		return 0, 0, false, err // io.EOF here: the server closed between responses
	}
	// "HTTP/1.1 200 OK": version, space, three digits, then a space or the end.
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
		return 0, 0, false, fmt.Errorf("%w: status line %q", ErrBadResponse, line)
	}
	for _, d := range line[9:12] {
		if d < '0' || d > '9' {
			return 0, 0, false, fmt.Errorf("%w: status line %q", ErrBadResponse, line)
		}
		status = status*10 + int(d-'0')
	}
	if status < 100 {
		return 0, 0, false, fmt.Errorf("%w: status %03d in %q", ErrBadResponse, status, line)
	}
	length = -1
	for n := 0; ; n++ {
		if n == maxHeaderLines {
			return 0, 0, false, fmt.Errorf("%w: more than %d header lines", ErrBadResponse, maxHeaderLines)
		}
		line, err := readLine(rd)
		if err != nil {
			return 0, 0, false, unexpected(err)
		}
		if len(line) == 0 {
			return status, length, chunked, nil
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return 0, 0, false, fmt.Errorf("%w: header line %q", ErrBadResponse, line)
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			v, perr := strconv.ParseInt(string(value), 10, 64)
			if perr != nil || v < 0 || (length >= 0 && v != length) {
				return 0, 0, false, fmt.Errorf("%w: Content-Length %q", ErrBadResponse, value)
			}
			length = v
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			if !bytes.EqualFold(value, []byte("chunked")) {
				return 0, 0, false, fmt.Errorf("%w: Transfer-Encoding %q not supported", ErrBadResponse, value)
			}
			chunked = true
		case bytes.EqualFold(name, []byte("Connection")):
			if bytes.EqualFold(value, []byte("close")) {
				return 0, 0, false, fmt.Errorf("%w: server answered Connection: close", ErrBadResponse)
			}
		}
	}
}

// readChunked reads a chunked body: hex size lines (extensions after ';' ignored), each
// chunk followed by CRLF, a zero-size chunk, then trailer lines up to an empty line.
func readChunked(rd *bufio.Reader, body []byte) ([]byte, error) {
	for {
		line, err := readLine(rd)
		if err != nil {
			return body, unexpected(err)
		}
		if semi := bytes.IndexByte(line, ';'); semi >= 0 {
			line = line[:semi]
		}
		line = bytes.TrimSpace(line)
		size, perr := strconv.ParseUint(string(line), 16, 32)
		if perr != nil || len(line) == 0 {
			return body, fmt.Errorf("%w: chunk size %q", ErrBadResponse, line)
		}
		if size == 0 {
			for n := 0; ; n++ {
				if n == maxHeaderLines {
					return body, fmt.Errorf("%w: more than %d trailer lines", ErrBadResponse, maxHeaderLines)
				}
				tl, err := readLine(rd)
				if err != nil {
					return body, unexpected(err)
				}
				if len(tl) == 0 {
					return body, nil
				}
			}
		}
		if uint64(len(body))+size > maxBodyBytes {
			return body, fmt.Errorf("%w: chunked body above %d bytes", ErrBadResponse, maxBodyBytes)
		}
		start := len(body)
		body = grow(body, int(size))
		if _, err := io.ReadFull(rd, body[start:]); err != nil {
			return body[:start], unexpected(err)
		}
		crlf, err := readLine(rd)
		if err != nil {
			return body, unexpected(err)
		}
		if len(crlf) != 0 {
			return body, fmt.Errorf("%w: chunk of %d bytes not followed by CRLF", ErrBadResponse, size)
		}
	}
}
