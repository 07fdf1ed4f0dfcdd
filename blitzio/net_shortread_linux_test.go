package blitzio

import (
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blitzgo/blitz/blitzio/internal/poller"
)

// A stream read that returns fewer bytes than asked for has emptied the receive queue,
// so it clears the read readiness it saw (no read that would fail with EAGAIN next).
// These check what that must not break: end of file that came with the last bytes, and
// data that comes after the short read.

// TestTCPShortReadThenEOF: bytes and the peer's FIN arrive before the read. The read
// returns the bytes (a short read) and the next one must still see the end of file,
// although no further edge will come for it.
func TestTCPShortReadThenEOF(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		for round := range 20 {
			c, s := connPair(t, rt)
			msg := strings.Repeat("m", 1+round)
			blockOn(t, rt, s.WriteAll([]byte(msg)))
			if err := s.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			if round%2 == 0 {
				time.Sleep(time.Millisecond) // mostly: both already queued at the read
			}
			buf := make([]byte, 64)
			var got []byte
			for {
				n, err := blockOn(t, rt, c.Read(buf)).Get()
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
			}
			if string(got) != msg {
				t.Fatalf("round %d: read %q, want %q", round, got, msg)
			}
			c.Close()
			s.Close()
		}
	})
}

// TestTCPShortReadThenMoreData: after each short read the peer sends again, at random
// moments around the read, and every byte must arrive (a readiness cleared after the new
// data's edge would lose it).
func TestTCPShortReadThenMoreData(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		c, s := connPair(t, rt)
		const rounds = 2000
		want := 0
		for i := range rounds {
			want += 1 + i%7
		}
		go func() {
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range rounds {
				if rng.IntN(4) == 0 {
					time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
				}
				if _, err := BlockOn(rt, s.WriteAll([]byte(strings.Repeat("d", 1+i%7)))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		total := 0
		buf := make([]byte, 64)
		for total < want {
			n, err := blockOn(t, rt, c.Read(buf)).Get()
			if err != nil {
				t.Fatalf("after %d of %d bytes: %v", total, want, err)
			}
			total += n
		}
		if total != want {
			t.Fatalf("read %d bytes, sent %d", total, want)
		}
	})
}

// TestTCPShortReadClearsReadable: the clearing itself. With nothing more on the way,
// a short read leaves the socket's Readable bit clear (so the next read waits for the
// driver instead of calling read(2)); a full read leaves it set. A readiness delivered
// meanwhile (the tick moved) keeps the bit, so each case gets a few tries.
func TestTCPShortReadClearsReadable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		c, s := connPair(t, rt)
		readable := func() bool {
			sio := c.fd.sio.Load()
			return sio != nil && sio.readiness.Load()&uint64(poller.Readable) != 0
		}
		// With io_uring's one-shot polls the driver learns of readiness only for a
		// direction a task waits on: wait for it with Readable, which arms it.
		waitReadable := func() {
			if sio := c.fd.sio.Load(); sio != nil && sio.drv.armer != nil {
				if err := blockOn(t, rt, c.Readable()); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, "the bytes to be readable", readable)
		}
		cleared := false
		for try := 0; try < 5 && !cleared; try++ {
			blockOn(t, rt, s.WriteAll([]byte("abc")))
			waitReadable()
			buf := make([]byte, 16)
			if n, err := blockOn(t, rt, c.Read(buf)).Get(); err != nil || n != 3 {
				t.Fatalf("read = %d, %v", n, err)
			}
			cleared = !readable()
		}
		if !cleared {
			t.Fatal("a short read left the Readable bit set in 5 tries")
		}
		// A read that fills its buffer proves nothing about what is left: the bit stays.
		blockOn(t, rt, s.WriteAll([]byte("abcdef")))
		waitReadable()
		buf := make([]byte, 3)
		if n, err := blockOn(t, rt, c.Read(buf)).Get(); err != nil || n != 3 {
			t.Fatalf("read = %d, %v", n, err)
		}
		if !readable() {
			t.Fatal("a full read cleared the Readable bit")
		}
		if n, err := blockOn(t, rt, c.Read(buf)).Get(); err != nil || n != 3 || string(buf) != "def" {
			t.Fatalf("second read = %d, %q, %v", n, buf, err)
		}
	})
}

// TestUnixShortReadAfterPassedDescriptor: a Unix stream read stops after a message that
// carried descriptors, with the next bytes already queued behind it and no edge to come
// for them. The second read must still get them (the short-read clearing is for TCP).
func TestUnixShortReadAfterPassedDescriptor(t *testing.T) {
	forEachBackend(t, func(t *testing.T, cfg Config) {
		netWatchdog(t, 60*time.Second)
		rt := newRT(t, cfg)
		path := filepath.Join(t.TempDir(), "s")
		l, err := ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		acc := Spawn(rt, l.Accept())
		peer, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer peer.Close()
		r, err := waitHandle(t, acc)
		if err != nil || r.Err != nil {
			t.Fatal(err, r.Err)
		}
		s := r.Value
		defer s.Close()
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, _, err := peer.WriteMsgUnix([]byte("ab"), unix.UnixRights(int(f.Fd())), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Write([]byte("cd")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "both messages queued", func() bool {
			n, err := unix.IoctlGetInt(int(s.fd.fd), unix.SIOCINQ)
			return err == nil && n >= 4
		})
		var got []byte
		buf := make([]byte, 16)
		for len(got) < 4 {
			n, err := blockOn(t, rt, s.Read(buf)).Get()
			if err != nil {
				t.Fatalf("after %q: %v", got, err)
			}
			got = append(got, buf[:n]...)
		}
		if string(got) != "abcd" {
			t.Fatalf("read %q, want \"abcd\"", got)
		}
	})
}
