package blitzio

import (
	"testing"
	"time"
)

// FuzzTimerRegistration drives sleeps through a runtime on a TestClock (registration by
// the pending stack, cancels while queued and in the wheel, re-registration after a
// cancel, the Context's periodic drains, firing by Advance) against a model: after every
// operation, each live sleep must be ready exactly when the model's clock has reached its
// deadline, and the runtime must hold exactly the model's pending timers.
//
// Input: pairs of bytes (op, arg). op%5: 0 start a sleep of arg ms; 1 drop a sleep; 2 reset
// a sleep to arg/4 ms and poll it; 3 advance the clock by arg%17 ms; 4 also count the
// registered timers.
func FuzzTimerRegistration(f *testing.F) {
	f.Add([]byte{0, 5, 0, 0, 3, 4, 3, 1, 4, 0})
	f.Add([]byte{0, 200, 1, 0, 0, 3, 2, 40, 3, 16, 3, 16})
	f.Add([]byte{0, 1, 0, 2, 0, 3, 2, 8, 2, 12, 1, 1, 3, 2, 4, 0, 3, 10})
	// Three sleeps queued, the middle one reset (cancelled while queued, registered
	// again): it must be drained out of the stack first, or the one below it is lost.
	f.Add([]byte{0, 10, 0, 11, 0, 12, 2, 4, 3, 16, 4, 0})
	seq := make([]byte, 0, 300)
	for i := range 140 { // enough starts for the Context's drain (every 64 registrations)
		seq = append(seq, byte(5*(i%3)), byte(i))
	}
	f.Add(append(seq, 3, 16, 4, 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		// A corrupted pending stack can make a drain loop forever under the timer lock:
		// fail loudly instead of hanging (registered first, so it stops after Close).
		watchdog := time.AfterFunc(20*time.Second, func() {
			panic("FuzzTimerRegistration: one input ran for 20 s: a drain loops or a timer operation hangs")
		})
		t.Cleanup(func() { watchdog.Stop() })
		clk := NewTestClock(epoch)
		rt := newRT(t, Config{Workers: 1, Clock: clk})
		regCx := NewContext(rt, Waker{})
		type sleep struct {
			f        *SleepFuture
			deadline int // ms on the model's clock
		}
		var live []sleep
		now := 0 // the model's clock, ms since epoch
		// check polls every live sleep; with count it also compares the number of registered
		// timers, which drains the pending stack, so it is done only on op 4: the other ops
		// leave entries queued for the next ones to cancel and re-register.
		check := func(step int, count bool) {
			t.Helper()
			pending := 0
			for i, s := range live {
				_, ready := s.f.Poll(NewContext(rt, Waker{})) // a fresh budget each time
				if want := now >= s.deadline; ready != want {
					t.Fatalf("step %d: sleep %d (deadline %d ms) ready=%v at %d ms", step, i, s.deadline, ready, now)
				}
				if now < s.deadline {
					pending++
				}
			}
			if !count {
				return
			}
			if n := rt.timerCount(); n != pending {
				t.Fatalf("step %d: %d timers registered, the model has %d", step, n, pending)
			}
		}
		for step := 0; step+1 < len(data) && step < 400; step += 2 {
			op, arg := data[step]%5, int(data[step+1])
			switch op {
			case 0:
				if len(live) < 40 {
					s := sleep{f: Sleep(time.Duration(arg) * time.Millisecond), deadline: now + arg}
					s.f.Poll(regCx)
					live = append(live, s)
				}
			case 1:
				if len(live) > 0 {
					i := arg % len(live)
					live[i].f.Drop()
					live = append(live[:i], live[i+1:]...)
				}
			case 2:
				if len(live) > 0 {
					i := arg % len(live)
					d := arg / 4
					live[i].f.Reset(time.Duration(d) * time.Millisecond)
					live[i].f.Poll(regCx)
					live[i].deadline = now + d
				}
			case 3:
				d := arg % 17
				clk.Advance(time.Duration(d) * time.Millisecond)
				now += d
			}
			check(step, op == 4)
		}
		check(len(data), true)
	})
}
