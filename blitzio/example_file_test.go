package blitzio_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/blitzgo/blitz/blitzio"
)

// Files from a task: create, write, read back, list the directory. Every call is a
// future run on the blocking pool; the worker serves other tasks meanwhile.
func ExampleOpenOptions() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	rt, _ := blitzio.New(blitzio.Config{Workers: 2})
	defer rt.Close()

	out, _ := blitzio.BlockOn(rt, blitzio.Async(func(co *blitzio.Co) string {
		name := filepath.Join(dir, "notes.txt")
		f := blitzio.Await(co, blitzio.OpenOptions{Write: true, Create: true, Exclusive: true}.Open(name))
		if f.Err != nil {
			return f.Err.Error()
		}
		blitzio.Await(co, f.Value.WriteAt([]byte("hello from a task\n"), 0))
		if r := blitzio.Await(co, f.Value.Close()); r.Err != nil {
			return r.Err.Error()
		}
		again := blitzio.Await(co, blitzio.OpenOptions{Write: true, Exclusive: true}.Open(name))
		data := blitzio.Await(co, blitzio.ReadFile(name))
		return fmt.Sprintf("%q, second exclusive create: %v", data.Value, os.IsExist(again.Err))
	}))
	fmt.Println(out)
	// Output: "hello from a task\n", second exclusive create: true
}
