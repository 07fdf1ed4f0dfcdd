package blitzio

import (
	"strings"
	"testing"
)

// A Map polled after Drop, or after its function panicked, used to report a zero value
// as if it had finished; it must panic instead, and a finished Map keeps its value.
func TestMapPolledAfterDropOrPanic(t *testing.T) {
	cx := NewContext(nil, Waker{})
	expectPanic := func(what, want string, f func()) {
		t.Helper()
		defer func() {
			r := recover()
			if r == nil {
				t.Fatalf("%s: no panic", what)
			}
			if msg, _ := r.(string); !strings.Contains(msg, want) {
				t.Fatalf("%s: panic %v, want one containing %q", what, r, want)
			}
		}()
		f()
	}
	dropped := Map(Pending[int](), func(v int) int { return v + 1 })
	if _, ok := dropped.Poll(cx); ok {
		t.Fatal("Map of a pending future is ready")
	}
	Drop(dropped)
	Drop(dropped) // idempotent
	expectPanic("Poll after Drop", "after Drop", func() { dropped.Poll(cx) })

	failed := Map(Ready(1), func(int) int { panic("map boom") })
	expectPanic("fn panics", "map boom", func() { failed.Poll(cx) })
	expectPanic("Poll after fn panicked", "after its function panicked", func() { failed.Poll(cx) })

	done := Map(Ready(1), func(v int) int { return v + 1 })
	for range 3 {
		if v, ok := done.Poll(cx); !ok || v != 2 {
			t.Fatalf("finished Map polled again: %v, %v; want 2, true", v, ok)
		}
	}
	Drop(done)
	if v, ok := done.Poll(cx); !ok || v != 2 {
		t.Fatalf("finished Map polled after Drop: %v, %v; want 2, true", v, ok)
	}
}
