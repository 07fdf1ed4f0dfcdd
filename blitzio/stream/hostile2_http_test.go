//go:build linux || darwin || freebsd

package stream

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHostile2HTTPServerOverListener: net/http's server on the Listener adapter, which
// exercises the Conn the way real code does (background reads cancelled by past read
// deadlines, write deadlines, CloseWrite, concurrent Read and Write), with many keep-alive
// clients posting bodies at once, then a graceful Shutdown.
func TestHostile2HTTPServerOverListener(t *testing.T) {
	rt := newRuntime(t, 2)
	ln := tcpListener(t, rt)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			fmt.Fprintf(w, "%s:%d", r.URL.Path, len(b))
		}),
		ReadTimeout:  hostile2Watchdog,
		WriteTimeout: hostile2Watchdog,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: hostile2Watchdog}
	var wg sync.WaitGroup
	for g := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				body := strings.Repeat("b", g*100+i)
				resp, err := client.Post(fmt.Sprintf("http://%s/p%d", ln.Addr(), g), "text/plain", strings.NewReader(body))
				if err != nil {
					t.Errorf("POST: %v", err)
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := fmt.Sprintf("/p%d:%d", g, len(body)); err != nil || string(got) != want {
					t.Errorf("response %q, %v; want %q", got, err, want)
					return
				}
			}
		}()
	}
	within(t, "HTTP clients", wg.Wait)
	// Idle client connections first: the Transport may have dialed a connection it never
	// used, which the server keeps in StateNew (Shutdown waits 5 s for those).
	tr.CloseIdleConnections()
	within(t, "Shutdown", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != http.ErrServerClosed {
			t.Errorf("Serve = %v", err)
		}
	})
}
