//go:build unix

package blitzio_test

import (
	"fmt"

	"github.com/blitzgo/blitz/blitzio"
)

// Run a command from a task and collect its output; the worker runs other tasks while
// the child runs.
func ExampleCmd_Output() {
	rt, _ := blitzio.New(blitzio.Config{Workers: 2})
	defer rt.Close()
	r, _ := blitzio.BlockOn(rt, blitzio.Command("sh", "-c", "echo hello; exit 2").Output())
	if r.Err != nil {
		fmt.Println(r.Err)
		return
	}
	fmt.Printf("%q, exit code %d\n", r.Value.Stdout, r.Value.Status.ExitCode())
	// Output: "hello\n", exit code 2
}
