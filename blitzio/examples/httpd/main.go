//go:build linux || darwin || freebsd

// Command httpd is an HTTP server on blitzio serving a plain-text and a JSON route with
// package httpserve (ordinary net/http handlers on an http.ServeMux). It stops cleanly on
// SIGINT or SIGTERM: it stops accepting, closes idle connections, lets the requests in
// flight finish for up to -grace, and exits 0.
//
//	go run ./examples/httpd -addr 127.0.0.1:8080
//	curl http://127.0.0.1:8080/plaintext
//	curl http://127.0.0.1:8080/json?name=gopher
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/httpserve"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	grace := flag.Duration("grace", 10*time.Second, "how long requests in flight may finish after SIGINT/SIGTERM")
	flag.Parse()
	if err := run(*addr, *grace); err != nil {
		log.Fatal(err)
	}
}

// routes is the server's handler: GET /plaintext and GET /json.
func routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /plaintext", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "Hello, World!")
	})
	mux.HandleFunc("GET /json", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		if name == "" {
			name = "World"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"message": "Hello, " + name + "!"})
	})
	return mux
}

func run(addr string, grace time.Duration) error {
	rt, err := blitzio.New(blitzio.Config{})
	if err != nil {
		return err
	}
	stop := blitzio.NewShutdown()
	if err := stop.TriggerOn(blitzio.SignalInterrupt, blitzio.SignalTerminate); err != nil {
		return err
	}
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return err
	}
	l, err := blitzio.ListenTCP("tcp", ta)
	if err != nil {
		return err
	}
	srv := &httpserve.Server{
		Handler:           routes(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		Coordinator:       stop, // requests in flight hold guards; the trigger stops accepting
	}
	backend, _ := rt.Backend()
	fmt.Printf("httpd: listening on http://%s (%v)\n", l.Addr(), backend)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(rt, l) }()

	select {
	case err := <-served:
		return err // Serve failed before any signal
	case <-stop.Context().Done():
	}
	fmt.Println("httpd: stopping: no new connections; waiting for", stop.InFlight(), "requests in flight")
	stop.OnShutdown(rt.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	werr := stop.Wait(ctx)
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	if werr != nil {
		fmt.Fprintln(os.Stderr, "httpd: stopped with work cut short:", werr)
		return nil
	}
	fmt.Println("httpd: stopped cleanly")
	return nil
}
