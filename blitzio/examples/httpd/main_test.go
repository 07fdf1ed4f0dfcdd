//go:build linux || darwin || freebsd

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio/examples/internal/runex"
)

// TestHTTPDServesAndStops builds and starts the server on a free port, requests both
// routes (net/http's client, keep-alive), sends SIGTERM, and checks that the process
// says it stopped cleanly and exits 0.
func TestHTTPDServesAndStops(t *testing.T) {
	prog := runex.Start(t, "-addr", "127.0.0.1:0")
	cmd, next, base := prog.Cmd, prog.Next, prog.Addr

	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Get(base + "/plaintext")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "Hello, World!" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("/plaintext: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, err = client.Get(base + "/json?name=gopher")
	if err != nil {
		t.Fatal(err)
	}
	var msg map[string]string
	err = json.NewDecoder(resp.Body).Decode(&msg)
	resp.Body.Close()
	if err != nil || msg["message"] != "Hello, gopher!" || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("/json: %v %v %v", msg, err, resp.Header)
	}
	resp, err = client.Get(base + "/missing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("/missing: %d", resp.StatusCode)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if l := next(); !strings.Contains(l, "stopping") {
		t.Fatalf("after SIGTERM the server printed %q", l)
	}
	if l := next(); l != "httpd: stopped cleanly" {
		t.Fatalf("last line %q", l)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the server exited with %v, want 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watchdog: the server did not exit")
	}
}
