//go:build linux || darwin || freebsd

package httpserve_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/httpserve"
)

// Serve an http.ServeMux on a blitzio runtime, fetch a page with net/http's client, and
// stop gracefully.
func Example() {
	rt, err := blitzio.New(blitzio.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	l, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello/{name}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello, %s\n", r.PathValue("name"))
	})
	srv := &httpserve.Server{Handler: mux, IdleTimeout: time.Minute}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(rt, l) }()

	resp, err := http.Get("http://" + l.Addr().String() + "/hello/gopher")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.Status, " ", string(body))

	fmt.Println(srv.Shutdown(context.Background()))
	fmt.Println(<-served)
	// Output:
	// 200 OK hello, gopher
	// <nil>
	// http: Server closed
}

// A server joined to a blitzio.Shutdown: the trigger (here by code; in a program,
// TriggerOn(blitzio.SignalInterrupt, blitzio.SignalTerminate)) stops accepting, and
// Wait returns once the requests in flight are answered.
func ExampleServer_coordinator() {
	rt, err := blitzio.New(blitzio.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	stop := blitzio.NewShutdown()
	l, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		panic(err)
	}
	srv := &httpserve.Server{Coordinator: stop, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(rt, l) }()

	resp, err := http.Get("http://" + l.Addr().String() + "/")
	if err != nil {
		panic(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	stop.Trigger()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fmt.Println(stop.Wait(ctx))
	fmt.Println(<-served)
	// Output:
	// <nil>
	// http: Server closed
}

type tenantKey struct{}

// ConnState, BaseContext and ConnContext work as in http.Server: here the states of one
// keep-alive connection that serves two requests are printed, and every request's
// context carries a value set by BaseContext. The runtime uses the epoll backend,
// recommended for socket servers on Linux (see the package documentation).
func ExampleServer_hooks() {
	rt, err := blitzio.New(blitzio.Config{Backend: blitzio.BackendEpoll})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	l, err := blitzio.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		panic(err)
	}
	states := make(chan http.ConnState, 16)
	srv := &httpserve.Server{
		ConnState: func(_ net.Conn, st http.ConnState) { states <- st },
		BaseContext: func(net.Listener) context.Context {
			return context.WithValue(context.Background(), tenantKey{}, "blue")
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "tenant %v", r.Context().Value(tenantKey{}))
		}),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(rt, l) }()

	// One connection written by hand: an http.Client may open a second one (its
	// Transport does not reuse a connection whose request write it has not seen end
	// within 50 ms, which a loaded machine can take), and print other states.
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		panic(err)
	}
	br := bufio.NewReader(c)
	for range 2 {
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: example\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(string(body))
	}
	c.Close()
	for st := range states {
		fmt.Println(st)
		if st == http.StateClosed {
			break
		}
	}
	srv.Shutdown(context.Background())
	<-served
	// Output:
	// tenant blue
	// tenant blue
	// new
	// active
	// idle
	// active
	// idle
	// closed
}
