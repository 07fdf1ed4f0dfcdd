//go:build linux

package blitzio

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// One File shared by two tasks: W writes through the stream interface and flushes, S
// asks for Stat (which waits for the writes in flight). Whichever way the write runs
// (ring or pool), both must finish.
func TestHostile3RingWriteFlushAndStatFromTwoTasks(t *testing.T) {
	for _, mode := range []string{"ring", "auto", "pool"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, mode)
			rt, err := New(Config{Workers: 2, Backend: BackendIOUring})
			if err != nil {
				t.Skip(err)
			}
			defer rt.Close()
			dir := t.TempDir()
			chunk := bytes.Repeat([]byte("z"), 1<<20)
			for i := range 30 {
				f := must(t, rt, Create(filepath.Join(dir, "f")))
				hW := Spawn(rt, Async(func(co *Co) error {
					if r := Await(co, writeAll(f, chunk)); r.Err != nil {
						return r.Err
					}
					return Await(co, f.Flush()).Err
				}))
				hS := Spawn(rt, Async(func(co *Co) error {
					return Await(co, f.Stat()).Err
				}))
				var errW, errS error
				hostile3Watch(t, 5*time.Second, "iteration "+itoa(i)+": Stat task hangs", func() { errS, _ = hS.Wait() })
				hostile3Watch(t, 5*time.Second, "iteration "+itoa(i)+": the writer's Flush hangs after another task's Stat settled the ring write (the ring op keeps one waker)", func() { errW, _ = hW.Wait() })
				if errW != nil || errS != nil {
					t.Fatalf("write/flush %v, stat %v", errW, errS)
				}
				must(t, rt, f.Close())
			}
		})
	}
}

// A task reads a regular file through the stream interface while another task Closes
// it. Close does not wait for the read in flight (on the ring it cancels it); the reader
// must be woken and see either the bytes or an error (fs.ErrClosed), never sleep forever.
func TestHostile3CloseWhileStreamReadInFlightOnOtherTask(t *testing.T) {
	for _, mode := range []string{"ring", "pool"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(fileIOEnv, mode)
			rt, err := New(Config{Workers: 2, Backend: BackendIOUring})
			if err != nil {
				t.Skip(err)
			}
			defer rt.Close()
			name := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(name, bytes.Repeat([]byte("r"), 4<<20), 0o644); err != nil {
				t.Fatal(err)
			}
			for i := range 50 {
				f := must(t, rt, Open(name))
				hR := Spawn(rt, Async(func(co *Co) error {
					buf := make([]byte, 1<<20)
					for {
						r := Await(co, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, buf) }))
						if r.Err != nil {
							return r.Err
						}
					}
				}))
				hC := Spawn(rt, Async(func(co *Co) error {
					return Await(co, f.Close()).Err
				}))
				var errC error
				hostile3Watch(t, 5*time.Second, "iteration "+itoa(i)+": Close hangs", func() { errC, _ = hC.Wait() })
				if errC != nil {
					t.Fatalf("Close = %v", errC)
				}
				hostile3Watch(t, 5*time.Second, "iteration "+itoa(i)+": the reader is never woken after another task's Close settled its ring read", func() { hR.Wait() })
			}
		})
	}
}
