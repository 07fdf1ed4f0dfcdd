package blitzio_test

import (
	"errors"
	"fmt"

	"github.com/blitzgo/blitz/blitzio"
)

// A task whose Poll panics completes with a *PanicError: printed, it is one line naming
// the value and the line that panicked; Stack (or %+v) has the whole stack.
func ExamplePanicError() {
	rt, _ := blitzio.New(blitzio.Config{Workers: 1})
	defer rt.Close()
	h := blitzio.Spawn(rt, blitzio.PollFn(func(*blitzio.Context) (int, bool) {
		panic("boom") // line 16
	}))
	_, err := h.Wait()
	fmt.Println(err)
	var pe *blitzio.PanicError
	fmt.Println(errors.As(err, &pe), pe.Value, pe.InDrop, len(pe.Stack) > 0)
	// Output:
	// blitzio: task panicked: boom [at panic2_example_test.go:16]
	// true boom false true
}
