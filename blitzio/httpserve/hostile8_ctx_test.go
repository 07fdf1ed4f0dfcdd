//go:build linux || darwin || freebsd

package httpserve

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// TestHostile8ContextCancelledOnClientClose: net/http's background read sees the
// client's close while the handler runs and cancels the request's context (the way a
// handler learns that nobody waits for its answer); so does this package's watch of
// the socket.
func TestHostile8ContextCancelledOnClientClose(t *testing.T) {
	defer watchdog(t, 60*time.Second)()
	for _, name := range []string{"net/http", "httpserve"} {
		got := make(chan bool, 1)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
				got <- true
			case <-time.After(10 * time.Second):
				got <- false
			}
		})
		var addr string
		if name == "net/http" {
			addr = h4StartNetHTTP(t, h)
		} else {
			addr = start(t, blitzio.BackendEpoll, &Server{Handler: h, ErrorLog: discardLog()}).addr
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		time.Sleep(50 * time.Millisecond) // let the handler start (not a timing assertion)
		c.Close()
		if !<-got {
			t.Errorf("%s: the request's context was not cancelled within 10s of the client's close", name)
		}
	}
}
