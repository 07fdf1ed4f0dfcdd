//go:build unix

package blitzio

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Closing a pipe File (a Child's Stdout, say) from one task while another task's read
// waits on it: as with os.File, Close must not wait for data that may never come.
// File.Close's doc promises to wait for the writes in flight only.
func TestHostile3ClosePipeWithReadInFlightHangs(t *testing.T) {
	rt := fileRT(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	f := NewFile(r)
	reading := make(chan struct{})
	hR := Spawn(rt, PollFn(func(cx *Context) (Result[int], bool) {
		select {
		case <-reading:
		default:
			close(reading)
		}
		return f.PollRead(cx, make([]byte, 16))
	}))
	<-reading
	time.Sleep(20 * time.Millisecond) // the read is on the blocking pool, waiting
	closed := make(chan Result[struct{}], 1)
	go func() {
		v, _ := BlockOn(rt, nested[Result[struct{}]]{f.Close()})
		closed <- v
	}()
	select {
	case res := <-closed:
		if res.Err != nil {
			t.Fatalf("Close = %v", res.Err)
		}
	case <-time.After(3 * time.Second):
		w.Write([]byte("x")) // unblock, so the runtime can close
		t.Fatalf("Close of a pipe File hangs while another task's read waits for data that never comes")
	}
	hostile3Watch(t, 5*time.Second, "reader not finished after Close", func() { hR.Wait() })
}

// "A dropped read loses nothing: the bytes it brought in are served to the next read."
// A stream read left in flight, then a metadata operation (Stat, Sync, SetPermissions,
// SetLen to a larger size): the next read must start where the reader was, not after
// the abandoned read's bytes, and a relative seek must count from there too.
func TestHostile3MetadataOpAfterDroppedReadLosesBytes(t *testing.T) {
	t.Setenv(fileIOEnv, "pool") // the read always waits for the blocking pool
	rt := fileRT(t)
	name := filepath.Join(t.TempDir(), "f")
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ops := map[string]func(f *File) error{
		"Stat":           func(f *File) error { return run(t, rt, f.Stat()).Err },
		"Sync":           func(f *File) error { return run(t, rt, f.Sync()).Err },
		"SetPermissions": func(f *File) error { return run(t, rt, f.SetPermissions(0o644)).Err },
		"SetLen(grow)":   func(f *File) error { return run(t, rt, f.SetLen(2000)).Err },
	}
	for opName, op := range ops {
		t.Run(opName, func(t *testing.T) {
			f := must(t, rt, OpenOptions{Read: true, Write: true}.Open(name))
			defer run(t, rt, f.Close())
			p := make([]byte, 10)
			// One poll of a read, then abandon it (as a Select or Timeout that lost would).
			abandoned := run(t, rt, PollFn(func(cx *Context) (bool, bool) {
				_, ok := f.PollRead(cx, p)
				return !ok, true
			}))
			if !abandoned {
				t.Skip("the read completed at once")
			}
			if err := op(f); err != nil {
				t.Fatal(err)
			}
			q := make([]byte, 10)
			r := run(t, rt, PollFn(func(cx *Context) (Result[int], bool) { return f.PollRead(cx, q) }))
			if r.Err != nil || string(q[:r.Value]) != string(data[:r.Value]) {
				t.Fatalf("read after an abandoned read and %s = %q, %v; want %q (the abandoned read's bytes were lost)", opName, q[:r.Value], r.Err, data[:10])
			}
		})
	}
}
