package blitz

import (
	"testing"
	"time"

	"github.com/blitzgo/blitz/shared/lockfree"
)

// TestAnnounceSleepy checks the worker's odd -> even toggle on the shared counters and
// the poster's even -> odd one, as the sleep protocol uses them.
func TestAnnounceSleepy(t *testing.T) {
	var c sleepCounters
	c.IncrementJECIfSleepy() // poster: 0 -> 1
	if got := c.announceSleepy(); got != 2 {
		t.Fatalf("announceSleepy returned %d, want 2 (the value after the toggle)", got)
	}
	if got := c.announceSleepy(); got != 2 {
		t.Fatalf("announceSleepy on even returned %d, want unchanged 2", got)
	}
	if got := lockfree.ExtractJEC(c.Load()); got != 2 {
		t.Fatalf("JEC is %d after the announcements, want 2", got)
	}
	c.IncrementJECIfSleepy() // poster: 2 -> 3
	if got := c.announceSleepy(); got != 4 {
		t.Fatalf("announceSleepy after a post returned %d, want 4", got)
	}
}

// waitAllAsleep waits until every worker of p is blocked in the sleep protocol.
func waitAllAsleep(tb testing.TB, p *Pool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for int(lockfree.ExtractSleeping(p.counters.Load())) != len(p.workers) {
		if time.Now().After(deadline) {
			v := p.counters.Load()
			tb.Fatalf("workers did not all fall asleep: sleeping=%d inactive=%d of %d",
				lockfree.ExtractSleeping(v), lockfree.ExtractInactive(v), len(p.workers))
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// waitStolenSince waits, up to 10 s, until p's Stolen count exceeds before: a job that
// forked waits here for a thief to take its fork, however late the thief wakes, and
// the caller then checks whether it did.
func waitStolenSince(p *Pool, before uint64) {
	deadline := time.Now().Add(10 * time.Second)
	for p.Stats().Stolen == before && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
}

// TestSleepyPoolWakesForNewWork posts work after every worker fell asleep, many times:
// a lost wake-up shows as a timeout, not a hang.
func TestSleepyPoolWakesForNewWork(t *testing.T) {
	for _, w := range []int{2, 1, 3} {
		// 10,000 rounds on 2 workers; fewer for the other sizes, under -short and -race.
		rounds := 10000
		if w != 2 || testing.Short() || raceEnabled {
			rounds = 2000
		}
		p := newPool(t, Config{Workers: w, SpinRounds: 2})
		ran := make(chan int, 1)
		for r := 0; r < rounds; r++ {
			waitAllAsleep(t, p)
			p.Go(func(t *Task) { ran <- t.WorkerIndex() })
			select {
			case i := <-ran:
				if i < 0 || i >= w {
					t.Fatalf("injected job ran on worker %d", i)
				}
			case <-time.After(10 * time.Second):
				v := p.counters.Load()
				t.Fatalf("workers=%d round %d: posted job not taken within 10s (lost wake-up); sleeping=%d inactive=%d jec=%d",
					w, r, lockfree.ExtractSleeping(v), lockfree.ExtractInactive(v), lockfree.ExtractJEC(v))
			}
		}
		if s := p.Stats(); s.Wakes == 0 || s.Sleeps == 0 {
			t.Fatalf("no sleeps/wakes recorded: %+v", s)
		}
		// The counters are consistent again: every worker inactive and asleep.
		waitAllAsleep(t, p)
		if v := p.counters.Load(); int(lockfree.ExtractInactive(v)) != w {
			t.Fatalf("idle pool: inactive=%d, want %d", lockfree.ExtractInactive(v), w)
		}
	}
}

// TestForkWakesSleepers checks that a fork by a running job wakes sleeping workers
// (publish on demand counts sleepers as hungry). The job forks, then waits, without
// forking again, until a thief takes the fork: only the fork's own wake-up can bring a
// sleeping worker to it. (A version that ran fib and hoped for a steal before fib
// ended failed on a loaded machine, where waking a goroutine took longer than fib.)
func TestForkWakesSleepers(t *testing.T) {
	p := newPool(t, Config{Workers: 2, SpinRounds: 2})
	for r := 0; r < 20; r++ {
		waitAllAsleep(t, p)
		before := p.Stats().Stolen
		stolen := false
		within(t, 30*time.Second, "a fork on a sleeping pool", func() {
			Call(p, func(t *Task) int {
				f := napJob.Fork(t, nap, 0)
				waitStolenSince(p, before)
				v, ok := f.Stolen(t)
				if !ok {
					v = nap(t, 0)
				}
				stolen = ok
				return v
			})
		})
		if !stolen {
			t.Fatalf("round %d: a fork on a pool whose workers all slept was not stolen within 10s (the fork woke no sleeper); stats %+v", r, p.Stats())
		}
	}
}

var napJob Job[time.Duration, int]

func nap(_ *Task, d time.Duration) int { time.Sleep(d); return 1 }

// TestJoinerSleepsAndIsWokenByThief: a worker waiting for a stolen frame goes through
// the sleep protocol; the thief that finishes the frame must wake it (CoreLatch set).
func TestJoinerSleepsAndIsWokenByThief(t *testing.T) {
	p := newPool(t, Config{Workers: 2, SpinRounds: 1})
	for r := 0; r < 10; r++ {
		waitAllAsleep(t, p)
		before := p.Stats().Stolen
		done := make(chan int, 1)
		p.Go(func(t *Task) {
			f := napJob.Fork(t, nap, 30*time.Millisecond) // eager: pushed, the other worker takes it
			// Wait for the thief rather than for a fixed time, which a loaded machine
			// can outlast before it wakes the other worker.
			waitStolenSince(p, before)
			v, ok := f.Stolen(t)
			if !ok {
				v = nap(t, 0)
			}
			done <- v
		})
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: a worker waiting for its stolen frame was never woken", r)
		}
	}
	if s := p.Stats(); s.Stolen == 0 {
		t.Fatalf("the frame was never stolen, the test proved nothing: %+v", s)
	}
}
