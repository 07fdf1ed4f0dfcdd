package blitz_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/blitzgo/blitz/blitz"
)

// A panic in forked work reaches the joiner as a *PanicError whose message is one line:
// the value and the line that panicked. %+v adds the panicking goroutine's stack.
func ExamplePanicError() {
	p, _ := blitz.NewPool(blitz.Config{Workers: 2})
	defer p.Close()
	defer func() {
		var pe *blitz.PanicError
		if err, ok := recover().(error); ok && errors.As(err, &pe) {
			fmt.Println(pe)
			fmt.Println(pe.Value)
			fmt.Println(strings.Contains(fmt.Sprintf("%+v", pe), "goroutine "))
		}
	}()
	p.Call(func(t *blitz.Task) {
		blitz.Join(t, func(*blitz.Task) {}, func(*blitz.Task) {
			panic("boom") // line 26
		})
	})
	// Output:
	// blitz: panic in forked job: boom [at panic2_example_test.go:26]
	// boom
	// true
}
