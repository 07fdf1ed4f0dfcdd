//go:build linux

package main

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio/examples/internal/runex"
)

// rssGrowth measures how much the server's resident memory grows while load runs.
func rssGrowth(t *testing.T, prog *runex.Program, load func()) int64 {
	t.Helper()
	before, ok := prog.RSS()
	if !ok {
		t.Skip("cannot read the server's memory from /proc")
	}
	load()
	after, _ := prog.RSS()
	return after - before
}

// A client announcing a long argument made the server allocate all of it before a byte
// of it arrived: "*1\r\n$1048576\r\n" (16 bytes) cost 1 MiB. Clients that connect,
// announce, and go away, round after round, took the server to hundreds of MiB (the
// freed buffers are reused, so they must be zeroed, so they become resident). Redis's
// memory does not move under the same load.
func TestHostile7RESPAnnouncedLengthIsNotAllocated(t *testing.T) {
	prog := startRESP(t, "")
	dialRESP(t, prog.Addr).do("PING") // warm up
	conns, rounds := 256, 4
	if testing.Short() {
		rounds = 3
	}
	growth := rssGrowth(t, prog, func() {
		for range rounds {
			cs := make([]net.Conn, 0, conns)
			for range conns {
				c, err := net.DialTimeout("tcp", prog.Addr, 10*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				c.SetWriteDeadline(time.Now().Add(replyTimeout))
				if _, err := c.Write([]byte("*1\r\n$1048576\r\nab")); err != nil {
					t.Fatal(err)
				}
				cs = append(cs, c)
			}
			// A PING on a connection opened after them all is answered once they have
			// been accepted: each has had its chance to read its header and allocate.
			rc := dialRESP(t, prog.Addr)
			rc.do("PING")
			rc.c.Close()
			for _, c := range cs {
				c.Close()
			}
		}
	})
	const limit = 96 << 20
	if growth > limit {
		t.Fatalf("the server's memory grew by %d MiB for %d×%d clients that each sent 16 bytes "+
			"announcing 1 MiB (limit %d MiB): announced lengths are allocated up front",
			growth>>20, rounds, conns, limit>>20)
	}
	t.Logf("memory growth: %.1f MiB", float64(growth)/(1<<20))
}

// Each EXPIRE spawned a timer task that slept until the expiry, and nothing stopped it
// when the key was re-expired, overwritten or deleted: a client repeating EXPIRE k 100000
// held one sleeping task (about 400 bytes) per command for a day, so memory grew without
// bound (1M commands: +420 MiB). Now a key has at most one timer.
func TestHostile7RESPRepeatedExpireDoesNotPileUpTimers(t *testing.T) {
	prog := startRESP(t, "")
	rc := dialRESP(t, prog.Addr)
	rc.do("SET", "k", "v")
	n := 300_000
	if testing.Short() {
		n = 150_000
	}
	batch := strings.Repeat(command("EXPIRE", "k", "100000"), 1000)
	growth := rssGrowth(t, prog, func() {
		done := make(chan string, 1)
		go func() {
			for i := range n {
				if got, err := rc.tryReply(); err != nil || got != ":1\r\n" {
					done <- "EXPIRE #" + strconv.Itoa(i) + ": " + got + " " + errString(err)
					return
				}
			}
			done <- ""
		}()
		for range n / 1000 {
			rc.c.SetWriteDeadline(time.Now().Add(replyTimeout))
			if _, err := rc.c.Write([]byte(batch)); err != nil {
				t.Fatalf("writing EXPIREs: %v", err)
			}
		}
		if msg := <-done; msg != "" {
			t.Fatal(msg)
		}
	})
	if got := rc.do("TTL", "k"); !match(got, "~100000") {
		t.Fatalf("TTL: %q", got)
	}
	limit := int64(n) * 100 // 100 bytes a command: far below a task per command
	if growth > limit {
		t.Fatalf("the server's memory grew by %d MiB after %d EXPIREs of one key (limit %d MiB): "+
			"each EXPIRE leaves a sleeping timer behind", growth>>20, n, limit>>20)
	}
	t.Logf("memory growth: %.1f MiB", float64(growth)/(1<<20))
}

// A client that pipelines commands with big replies and never reads them: the server
// stops reading once its writes block (TCP's flow control does the rest), so its memory
// does not grow with what the client asks for, and other clients are still served.
func TestHostile7RESPClientThatNeverReads(t *testing.T) {
	prog := startRESP(t, "")
	setup := dialRESP(t, prog.Addr)
	setup.do("SET", "big", strings.Repeat("x", 64<<10))
	hog := dialRESP(t, prog.Addr)
	batch := []byte(strings.Repeat(command("GET", "big"), 100))
	growth := rssGrowth(t, prog, func() {
		for sent := 0; sent < 4096; sent += 100 { // up to 4096 replies, 256 MiB
			hog.c.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := hog.c.Write(batch); err != nil {
				break // the server has stopped reading: what matters is what it holds
			}
		}
	})
	if growth > 64<<20 {
		t.Fatalf("the server's memory grew by %d MiB for a client that never reads its replies", growth>>20)
	}
	if got := setup.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("another client meanwhile: %q", got)
	}
}
