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
// a request is in flight, serving netload's PlaintextHandler (routed as the fasthttp row). Ours runs
// on the epoll backend, which httpserve's documentation recommends for socket servers on
// Linux; the same server on io_uring (BackendAuto's choice there) is a variant row:
// io_uring's readiness completions are posted to the thread that submitted the poll,
// often a parked Go thread that must be woken: in this load that costs tens of times the
// context switches of epoll (perf stat: 93,000 against 3,400 for 300,000 requests at 100
// connections, pipelining 1), and its requests per second land within about 15% of
// epoll's, on either side.
func init() {
	httpServers = append([]netload.Server{
		{Name: "blitzio/epoll", Start: startBlitzioHTTP(blitzio.BackendEpoll)},
		{Name: "blitzio/io_uring", Start: startBlitzioHTTP(blitzio.BackendIOUring)},
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
