package blitz

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// TestHostile9GroupScopeInsideFunctions: Group functions (run on workers and by Wait)
// that open a Scope of their own through Pool.Call, more functions than workers, with a
// limit and without: everything spawned runs and Wait returns (Rayon's scope semantics
// inside errgroup's).
func TestHostile9GroupScopeInsideFunctions(t *testing.T) {
	for _, w := range []int{1, 2} {
		for _, limit := range []int{-1, 1, 3} {
			p := newPool(t, Config{Workers: w})
			g := NewGroup(p)
			g.SetLimit(limit)
			var spawned atomic.Int64
			const fns, tasks = 8, 50
			for range fns {
				g.Go(func() error {
					p.Call(func(t *Task) {
						Scope(t, func(s *Spawner) {
							for range tasks {
								s.Spawn(func(*Task) { spawned.Add(1) })
							}
						})
					})
					return nil
				})
			}
			pv, err := groupWait(t, fmt.Sprintf("w%d limit%d", w, limit), g)
			if pv != nil || err != nil {
				t.Fatalf("w%d limit %d: Wait = %v, panic %v", w, limit, err, pv)
			}
			if spawned.Load() != fns*tasks {
				t.Errorf("w%d limit %d: %d spawned tasks ran, want %d", w, limit, spawned.Load(), fns*tasks)
			}
		}
	}
}

// TestHostile9ScopePanicWaitsForSiblings: as Rayon's scope, a panic in a spawned task is
// propagated only once every other task has finished, and the other tasks all run. (The
// tasks do not wait for one another: spawned tasks may start in any order, as Rayon's.)
func TestHostile9ScopePanicWaitsForSiblings(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	var finished atomic.Int64
	var pv any
	runWithWatchdog(t, "Scope", func() {
		defer func() { pv = recover() }()
		p.Call(func(t *Task) {
			Scope(t, func(s *Spawner) {
				for i := range 21 {
					s.Spawn(func(*Task) {
						if i == 10 {
							panic("task boom")
						}
						x := 0
						for j := range 20000 {
							x += j
						}
						if x > 0 {
							finished.Add(1)
						}
					})
				}
			})
		})
	})
	if pe, ok := pv.(*PanicError); !ok || pe.Value != "task boom" {
		t.Fatalf("Scope panicked with %#v, want the task's *PanicError", pv)
	}
	if finished.Load() != 20 {
		t.Errorf("Scope re-raised the panic after %d of 20 sibling tasks finished", finished.Load())
	}
}
