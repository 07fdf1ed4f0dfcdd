//go:build linux

package blitzio

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Many tasks (far more than workers) read one File with ReadAt and AwaitReadAt, and
// stream reads, while another task closes it and plain goroutines open other files as
// fast as they can, to take the descriptor number back: no read may ever return the
// other files' bytes, and once Close finished every operation fails with fs.ErrClosed.
func TestHostile3CloseRacesReadersNoReusedDescriptor(t *testing.T) {
	for _, mode := range []string{"auto", "ring", "pool", "nowait"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, mode)
			rt := fileRT(t)
			dir := t.TempDir()
			a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			os.WriteFile(a, bytes.Repeat([]byte("A"), 1<<16), 0o644)
			os.WriteFile(b, bytes.Repeat([]byte("B"), 1<<16), 0o644)
			for range 3 {
				f := must(t, rt, Open(a))
				var closed sync.WaitGroup
				closed.Add(1)
				stop := make(chan struct{})
				var openers sync.WaitGroup
				for range 2 {
					openers.Add(1)
					go func() {
						defer openers.Done()
						for {
							select {
							case <-stop:
								return
							default:
							}
							if g, err := os.Open(b); err == nil {
								g.Close()
							}
						}
					}()
				}
				var readers []JoinHandle[error]
				for i := range 24 {
					readers = append(readers, Spawn(rt, Async(func(co *Co) error {
						p := make([]byte, 1+rand.IntN(8192))
						for {
							var err error
							var n int
							kind := i % 3
							switch kind {
							case 0:
								r := Await(co, f.ReadAt(p, int64(rand.IntN(1<<16-len(p)))))
								n, err = r.Value, r.Err
							case 1:
								n, err = f.AwaitReadAt(co, p, int64(rand.IntN(1<<16-len(p))))
							case 2:
								r := Await(co, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, p) }))
								n, err = r.Value, r.Err
								if r.Err == io.EOF && i%2 == 0 {
									Await(co, f.SeekTo(0, 0))
									continue
								}
							}
							if bytes.IndexByte(p[:n], 'B') >= 0 {
								return errors.New("read another file's bytes through a reused descriptor")
							}
							if err != nil {
								if errors.Is(err, fs.ErrClosed) {
									return nil
								}
								if kind == 2 && err == io.EOF {
									return nil
								}
								return err
							}
							if rand.IntN(4) == 0 {
								Await(co, YieldNow())
							}
						}
					})))
				}
				go func() {
					defer closed.Done()
					time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
					BlockOn(rt, nested[Result[struct{}]]{f.Close()})
				}()
				for i, h := range readers {
					var err error
					hostile3Watch(t, 20*time.Second, "reader "+itoa(i)+" hangs", func() { err, _ = h.Wait() })
					if err != nil {
						t.Errorf("reader %d: %v", i, err)
					}
				}
				hostile3Watch(t, 20*time.Second, "Close hangs", closed.Wait)
				close(stop)
				openers.Wait()
				if r := run(t, rt, f.ReadAt(make([]byte, 10), 0)); !errors.Is(r.Err, fs.ErrClosed) {
					t.Fatalf("ReadAt after Close = %v, %v", r.Value, r.Err)
				}
				if r := run(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, make([]byte, 10)) })); !errors.Is(r.Err, fs.ErrClosed) {
					t.Fatalf("read after Close = %v, %v", r.Value, r.Err)
				}
				if r := run(t, rt, f.Close()); !errors.Is(r.Err, fs.ErrClosed) {
					t.Fatalf("second Close = %v", r.Err)
				}
			}
		})
	}
}
