package blitzio_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/blitzgo/blitz/blitzio"
)

// Positioned reads from tasks. On Linux with io_uring they are completions on the
// runtime's ring (or reads on the worker when the page cache has the bytes); elsewhere
// they run on the blocking pool. The results are os.File.ReadAt's either way: a read
// that reaches the end of the file returns what it got and io.EOF.
func ExampleFile_ReadAt() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "digits")
	os.WriteFile(name, []byte("0123456789"), 0o644)
	rt, _ := blitzio.New(blitzio.Config{Workers: 2})
	defer rt.Close()

	out, _ := blitzio.BlockOn(rt, blitzio.Async(func(co *blitzio.Co) string {
		f := blitzio.Await(co, blitzio.Open(name))
		if f.Err != nil {
			return f.Err.Error()
		}
		defer blitzio.Await(co, f.Value.Close())
		mid, tail := make([]byte, 4), make([]byte, 4)
		a := blitzio.Await(co, f.Value.ReadAt(mid, 3))
		b := blitzio.Await(co, f.Value.ReadAt(tail, 8))
		return fmt.Sprintf("%q %v; %q %v", mid[:a.Value], a.Err, tail[:b.Value], b.Err)
	}))
	fmt.Println(out)
	// Output: "3456" <nil>; "89" EOF
}

// Tasks reading a file at random places, each with a buffer of its own. AwaitReadAt is
// ReadAt for an Async function: a read the page cache serves is done on the spot with
// nothing allocated (the buffer can stay on the task's stack), one that must wait for
// the disk suspends the function like Await.
func ExampleFile_AwaitReadAt() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "letters")
	os.WriteFile(name, []byte("abcdefghijklmnopqrstuvwxyz"), 0o644)
	rt, _ := blitzio.New(blitzio.Config{Workers: 2})
	defer rt.Close()

	f, _ := blitzio.BlockOn(rt, blitzio.Open(name))
	if f.Err != nil {
		fmt.Println(f.Err)
		return
	}
	var hs []blitzio.JoinHandle[string]
	for _, off := range []int64{0, 10, 24} {
		hs = append(hs, blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) string {
			var buf [3]byte
			n, err := f.Value.AwaitReadAt(co, buf[:], off)
			return fmt.Sprintf("%q %v", buf[:n], err)
		})))
	}
	for _, h := range hs {
		s, _ := h.Wait()
		fmt.Println(s)
	}
	blitzio.BlockOn(rt, f.Value.Close())
	// Output:
	// "abc" <nil>
	// "klm" <nil>
	// "yz" EOF
}
