package blitzio

import "testing"

// countingDropper is a future that records how often it was dropped.
type countingDropper struct{ drops int }

func (c *countingDropper) Poll(*Context) (int, bool) { return 0, false }
func (c *countingDropper) Drop()                     { c.drops++ }

// Regression: WithDrop used to replace the wrapped future's Drop with the hook, so an
// aborted task never dropped the future inside (an Async function suspended in an
// Await never unwound, a Sleep kept its timer entry).
func TestWithDropAlsoDropsTheWrappedFuture(t *testing.T) {
	inner := &countingDropper{}
	var order []string
	f := WithDrop[int](inner, func() {
		order = append(order, "hook")
		if inner.drops != 0 {
			t.Error("the wrapped future was dropped before the hook ran")
		}
	})
	Drop(f)
	Drop(f) // idempotent: neither the hook nor the inner Drop runs again
	if len(order) != 1 || inner.drops != 1 {
		t.Fatalf("after two Drops: hook ran %d times, inner Drop %d times; want 1 and 1", len(order), inner.drops)
	}
}

// A hook that panics still lets the wrapped future be dropped (the panic propagates to
// whoever dropped, as before).
func TestWithDropPanickingHookStillDropsTheWrappedFuture(t *testing.T) {
	inner := &countingDropper{}
	f := WithDrop[int](inner, func() { panic("hook") })
	func() {
		defer func() {
			if r := recover(); r != "hook" {
				t.Fatalf("recovered %v, want the hook's panic", r)
			}
		}()
		Drop(f)
	}()
	if inner.drops != 1 {
		t.Fatalf("inner Drop ran %d times after a panicking hook, want 1", inner.drops)
	}
}
