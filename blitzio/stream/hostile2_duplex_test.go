//go:build linux || darwin || freebsd

package stream

import (
	"bytes"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/blitzgo/blitz/blitzio"
)

// TestHostile2DuplexConnEchoTinyBuffers: goroutines write and read through Conns over
// Duplex ends with 1..3-byte buffers while tasks echo with Copy; every byte comes back
// in order (no lost wake-up hangs the pipe: the watchdog reports it).
func TestHostile2DuplexConnEchoTinyBuffers(t *testing.T) {
	rt := newRuntime(t, 2)
	var wg sync.WaitGroup
	for i := range 12 {
		a, b := Duplex(1 + i%3)
		c := NewConn(a)
		echo := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) blitzio.Result[int64] {
			r := blitzio.Await(co, CopyBuffer(b, b, make([]byte, 1+rand.IntN(5))))
			b.CloseWrite()
			return r
		}))
		data := make([]byte, 3000+rand.IntN(3000))
		for j := range data {
			data[j] = byte(rand.Uint32())
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			for off := 0; off < len(data); {
				n := min(len(data)-off, 1+rand.IntN(50))
				if _, err := c.Write(data[off : off+n]); err != nil {
					t.Errorf("Write: %v", err)
					return
				}
				off += n
			}
			c.CloseWrite()
		}()
		go func() {
			defer wg.Done()
			got, err := io.ReadAll(c)
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("echo: %d of %d bytes, %v", len(got), len(data), err)
			}
			r, err := echo.Wait()
			if err != nil || r.Err != nil || r.Value != int64(len(data)) {
				t.Errorf("echo task = %+v, %v", r, err)
			}
			c.Close()
		}()
	}
	within(t, "echo over tiny Duplex buffers", wg.Wait)
}
