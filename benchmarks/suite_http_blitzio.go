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
// a request is in flight, serving netload's PlaintextHandler (http.ServeMux).
func init() {
	httpServers = append([]netload.Server{{Name: "blitzio", Start: startBlitzioHTTP}}, httpServers...)
}

func startBlitzioHTTP(addr string) (string, func() error, error) {
	rt, err := benchRuntime(blitzio.BackendAuto)
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
