package blitzio_test

import (
	"errors"
	"fmt"
	"slices"

	"github.com/blitzgo/blitz/blitzio"
)

// JoinSet.Spawn returns an AbortHandle: it can cancel one task of the set, whose result
// Next then reports as ErrCancelled, but it cannot take the result away from the set.
func ExampleAbortHandle() {
	rt, _ := blitzio.New(blitzio.Config{})
	defer rt.Close()

	var set blitzio.JoinSet[string]
	set.Spawn(rt, blitzio.Ready("quick"))
	slow := set.Spawn(rt, blitzio.Pending[string]()) // never finishes by itself
	slow.Abort()

	var got []string
	for set.Len() > 0 {
		v, err := set.WaitNext()
		if errors.Is(err, blitzio.ErrCancelled) {
			v = "cancelled"
		}
		got = append(got, v)
	}
	slices.Sort(got)
	fmt.Println(got, slow.IsFinished())
	// Output: [cancelled quick] true
}

// JoinHandle.AbortHandle lets other code cancel a task while the JoinHandle, and with it
// the result, stays with its owner.
func ExampleJoinHandle_AbortHandle() {
	rt, _ := blitzio.New(blitzio.Config{})
	defer rt.Close()

	h := blitzio.Spawn(rt, blitzio.Pending[int]())
	canceller := h.AbortHandle()
	go canceller.Abort()

	_, err := h.Wait()
	fmt.Println(errors.Is(err, blitzio.ErrCancelled), canceller.IsFinished())
	// Output: true true
}
