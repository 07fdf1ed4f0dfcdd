//go:build linux || darwin || freebsd

package benchmarks

import (
	"errors"
	"net/http"

	"github.com/blitzgo/blitz/benchmarks/netload"
	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/httpserve"
)

// blitzio's own HTTP server (package httpserve) is the http suite's first row, "ours":
// one task per connection parsing requests, the handler on a pooled goroutine only while
// a request is in flight, serving netload's PlaintextHandler (routed as the fasthttp row).
// Ours runs on io_uring, the backend BackendAuto picks on Linux, whose socket readiness
// comes from one-shot polls armed by the busy worker (see blitzio's package doc); the
// same server on epoll is a variant row. (Before the one-shot polls, io_uring kept one
// multishot poll per socket, whose completions often had to wake a parked Go thread,
// and epoll was ours: it then served 4-7% more requests per second.)
func init() {
	httpServers = append([]netload.Server{
		{Name: "blitzio/io_uring", Start: startBlitzioHTTP(blitzio.BackendIOUring)},
		{Name: "blitzio/epoll", Start: startBlitzioHTTP(blitzio.BackendEpoll)},
	}, httpServers...)
}

func startBlitzioHTTP(b blitzio.Backend) netload.StartFunc {
	return func(addr string) (string, func() error, error) { return serveBlitzioHTTP(b, addr) }
}

func serveBlitzioHTTP(b blitzio.Backend, addr string) (string, func() error, error) {
	rt, err := benchRuntime(b)
	if err != nil {
		return "", nil, err
	}
	l, err := listenTCP(addr)
	if err != nil {
		rt.Close()
		return "", nil, err
	}
	srv := &httpserve.Server{Handler: netload.PlaintextHandler()}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(rt, l) }()
	bound := l.Addr().String()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		err := srv.Close()
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return errors.Join(err, rt.Close())
	}
	return bound, stop, nil
}
