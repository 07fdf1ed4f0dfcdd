package blitzio

import "testing"

// hostile7AlwaysReady is a future that is ready at every poll, without spending budget.
type hostile7AlwaysReady struct{}

func (hostile7AlwaysReady) Poll(*Context) (int, bool) { return 1, true }

// BenchmarkAwaitReadyAsync: the cost of one Await of a future that is ready at once (no
// coroutine switch): the checks Await makes around the poll, which every await pays.
func BenchmarkAwaitReadyAsync(b *testing.B) {
	n := b.N
	f := Async(func(co *Co) int {
		s := 0
		var r Future[int] = hostile7AlwaysReady{}
		for range n {
			s += Await(co, r)
		}
		return s
	})
	cx := NewContext(nil, Waker{})
	b.ReportAllocs()
	b.ResetTimer()
	if v, ok := f.Poll(cx); !ok || v != n {
		b.Fatal(v, ok)
	}
}
