//go:build linux || darwin || freebsd

package httpserve

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/blitzgo/blitz/blitzio"
)

// BenchmarkDispatch compares the two ways of running a handler off the connection's
// task: a round trip through the server's pool of parked goroutines (a channel send to
// a parked goroutine, and its answer) against one through blitzio.SpawnBlocking (the
// blocking pool) and the JoinHandle's Wait.
func BenchmarkDispatch(b *testing.B) {
	b.Run("pool", func(b *testing.B) {
		p := handlerPool{maxIdle: maxIdleWorkers()}
		defer p.closeIdle()
		done := make(chan struct{}, 1)
		b.ReportAllocs()
		j := signalJob(done)
		for b.Loop() {
			p.get().ch <- j
			<-done
		}
	})
	b.Run("SpawnBlocking", func(b *testing.B) {
		rt, err := blitzio.New(blitzio.Config{Workers: 2})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close()
		b.ReportAllocs()
		for b.Loop() {
			blitzio.SpawnBlocking(rt, func() struct{} { return struct{}{} }).Wait()
		}
	})
}

// signalJob is a job that only answers: the dispatch round trip without a handler.
type signalJob chan struct{}

func (j signalJob) serve(*hworker) { j <- struct{}{} }

// BenchmarkServePlaintext measures keep-alive requests and their responses through the
// whole server on one client connection, 1 or 16 pipelined requests per write. The
// allocations reported include the client's (http.ReadResponse in this process); for
// the server's own, profile with -memprofile.
func BenchmarkServePlaintext(b *testing.B) {
	for _, pipeline := range []int{1, 16} {
		b.Run(map[int]string{1: "p1", 16: "p16"}[pipeline], func(b *testing.B) {
			rt, err := blitzio.New(blitzio.Config{Workers: 2})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			l, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				b.Fatal(err)
			}
			body := []byte("Hello, World!")
			srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = []string{"text/plain"}
				w.Write(body)
			})}
			go srv.Serve(rt, l)
			defer srv.Close()
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			var req []byte
			for i := 0; i < pipeline; i++ {
				req = append(req, "GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n"...)
			}
			br := bufio.NewReader(c)
			b.ReportAllocs()
			for b.Loop() {
				c.Write(req)
				for i := 0; i < pipeline; i++ {
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
				}
			}
			b.ReportMetric(float64(pipeline), "req/op")
		})
	}
}
