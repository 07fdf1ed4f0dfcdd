//go:build linux

package httpserve

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// A client that sends its request(s) and at once half-closes (shutdown of its writing
// side), then reads a large answer slowly: the server's writes wait for room on a
// socket whose peer has half-closed, which on io_uring's one-shot readiness needs the
// multishot write poll (every poll there reports POLLRDHUP). The whole answer must
// arrive, on every backend.

// hostile15Backends runs f per backend, io_uring twice: one-shot readiness (the
// default) and multishot polls (BLITZIO_IOURING_MULTISHOT=1, read when the runtime is
// made).
func hostile15Backends(t *testing.T, f func(t *testing.T, b blitzio.Backend)) {
	for _, v := range []struct {
		name      string
		b         blitzio.Backend
		multishot bool
	}{
		{"epoll", blitzio.BackendEpoll, false},
		{"io_uring", blitzio.BackendIOUring, false},
		{"io_uring-multishot", blitzio.BackendIOUring, true},
	} {
		t.Run(v.name, func(t *testing.T) {
			if v.multishot {
				t.Setenv("BLITZIO_IOURING_MULTISHOT", "1")
			}
			rt, err := blitzio.New(blitzio.Config{Workers: 2, Backend: v.b})
			if err != nil {
				if errors.Is(err, blitzio.ErrBackendUnavailable) {
					t.Skipf("%v: %v", v.b, err)
				}
				t.Fatal(err)
			}
			rt.Close()
			f(t, v.b)
		})
	}
}

// hostile15Body is the recognisable body of n bytes for request i.
func hostile15Body(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*31 + j*7 + j>>12)
	}
	return b
}

// hostile15SlowReader reads from r in small pieces with a pause now and then, as a slow
// client does.
type hostile15SlowReader struct {
	r io.Reader
	n int
}

func (s *hostile15SlowReader) Read(p []byte) (int, error) {
	if len(p) > 8<<10 {
		p = p[:8<<10]
	}
	if s.n++; s.n%64 == 0 {
		time.Sleep(time.Millisecond)
	}
	return s.r.Read(p)
}

// hostile15Dial connects to ts with a small receive buffer, set before the connect (set
// after it, below the window already advertised, it stalls the kernel's transfers for
// seconds), so that the server's writes soon wait for room. The caller pauses before
// reading, so that they wait with the half-close already seen.
func hostile15Dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 32<<10) })
		return serr
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// hostile15HalfClose shuts down c's writing side.
func hostile15HalfClose(t *testing.T, c net.Conn) {
	t.Helper()
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
}

// One request, the client half-closes at once and reads the answer slowly: a body of
// 8 MiB written by the handler in one Write, in 64 KiB Writes, or in Writes each
// followed by a Flush. The handler's context is cancelled (the half-close is seen) and
// every byte is sent anyway; then the server closes the connection.
func TestHostile15HalfCloseThenBigResponse(t *testing.T) {
	defer watchdog(t, 300*time.Second)()
	const size = 8 << 20
	for _, how := range []string{"one-write", "64k-writes", "flushed-writes"} {
		t.Run(how, func(t *testing.T) {
			hostile15Backends(t, func(t *testing.T, b blitzio.Backend) {
				var cancelled atomic.Bool
				body := hostile15Body(1, size)
				ts := start(t, b, &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					switch how {
					case "one-write":
						w.Write(body)
					default:
						for off := 0; off < len(body); off += 64 << 10 {
							if _, err := w.Write(body[off:min(off+64<<10, len(body))]); err != nil {
								return
							}
							if how == "flushed-writes" {
								w.(http.Flusher).Flush()
							}
						}
					}
					select {
					case <-r.Context().Done():
						cancelled.Store(true)
					case <-time.After(5 * time.Second):
					}
				})})
				c := hostile15Dial(t, ts.addr)
				c.SetDeadline(time.Now().Add(15 * time.Second))
				if _, err := io.WriteString(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
					t.Fatal(err)
				}
				hostile15HalfClose(t, c)
				time.Sleep(100 * time.Millisecond)
				br := bufio.NewReaderSize(&hostile15SlowReader{r: c}, 16<<10)
				resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
				if err != nil {
					t.Fatalf("reading the response head: %v", err)
				}
				got, err := io.ReadAll(resp.Body)
				if err != nil || !bytes.Equal(got, body) {
					t.Fatalf("body: %d bytes of %d (%v); equal %v", len(got), len(body), err, bytes.Equal(got, body))
				}
				if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
					t.Fatalf("after the response: %q, %v; want the server's close", rest, err)
				}
				if !cancelled.Load() {
					t.Errorf("the handler's context was not cancelled after the client half-closed")
				}
			})
		})
	}
}

// A pipelined batch (more request bytes than the connection's 4 KB read buffer, so the
// rest waits in the socket) followed by the client's half-close, answered with bodies
// from a few bytes to 256 KiB and read slowly: every response comes, in order, and then
// the server closes.
func TestHostile15PipelinedThenHalfClose(t *testing.T) {
	defer watchdog(t, 300*time.Second)()
	const n = 40
	size := func(i int) int {
		if i%3 == 0 {
			return 256 << 10
		}
		return 10 + i
	}
	hostile15Backends(t, func(t *testing.T, b blitzio.Backend) {
		ts := start(t, b, &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
			if err != nil {
				http.Error(w, "bad path", 400)
				return
			}
			w.Header().Set("X-Index", strconv.Itoa(i))
			w.Write(hostile15Body(i, size(i)))
		})})
		c := hostile15Dial(t, ts.addr)
		c.SetDeadline(time.Now().Add(15 * time.Second))
		var req bytes.Buffer
		pad := strings.Repeat("p", 150)
		for i := range n {
			fmt.Fprintf(&req, "GET /%d HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\n\r\n", i, pad)
		}
		if req.Len() <= 4096 {
			t.Fatalf("the batch is %d bytes, want more than the 4 KB read buffer", req.Len())
		}
		if _, err := c.Write(req.Bytes()); err != nil {
			t.Fatal(err)
		}
		hostile15HalfClose(t, c)
		time.Sleep(100 * time.Millisecond)
		br := bufio.NewReaderSize(&hostile15SlowReader{r: c}, 16<<10)
		for i := range n {
			resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
			if err != nil {
				t.Fatalf("response %d of %d: %v", i, n, err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Index") != strconv.Itoa(i) || !bytes.Equal(got, hostile15Body(i, size(i))) {
				t.Fatalf("response %d: status %d index %q, %d bytes (%v), want %d", i, resp.StatusCode, resp.Header.Get("X-Index"), len(got), err, size(i))
			}
		}
		if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
			t.Fatalf("after the batch: %q, %v; want the server's close", rest, err)
		}
	})
}

// Many clients at once, each sending a request, half-closing and reading a 1 MiB
// answer: none stalls (the driver serves many sockets whose write direction waits on
// a multishot poll at the same time).
func TestHostile15ManyHalfClosingClients(t *testing.T) {
	defer watchdog(t, 300*time.Second)()
	const clients, size = 24, 1 << 20
	body := hostile15Body(7, size)
	hostile15Backends(t, func(t *testing.T, b blitzio.Backend) {
		ts := start(t, b, &Server{ErrorLog: discardLog(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write(body)
		})})
		errs := make(chan error, clients)
		for k := range clients {
			go func() {
				d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
					return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 32<<10) })
				}}
				c, err := d.Dial("tcp", ts.addr)
				if err != nil {
					errs <- err
					return
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(15 * time.Second))
				if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
					errs <- err
					return
				}
				c.(*net.TCPConn).CloseWrite()
				time.Sleep(50 * time.Millisecond)
				br := bufio.NewReader(&hostile15SlowReader{r: c})
				resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
				if err != nil {
					errs <- fmt.Errorf("client %d: %w", k, err)
					return
				}
				got, err := io.ReadAll(resp.Body)
				if err != nil || !bytes.Equal(got, body) {
					errs <- fmt.Errorf("client %d: %d bytes of %d: %v", k, len(got), size, err)
					return
				}
				errs <- nil
			}()
		}
		for range clients {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	})
}
