package blitzio

import (
	"testing"
	"time"
	"unsafe"
)

// shiftWallH9 returns t with its wall clock reading moved by d (whole seconds) and its
// monotonic reading unchanged: the reading of a time taken before the system's wall clock
// was stepped by -d. It relies on time.Time's layout (wall, ext, loc; with a monotonic
// reading, seconds since 1885 in bits 30..62 of wall) and reports false if that does
// not hold.
func shiftWallH9(t time.Time, d time.Duration) (time.Time, bool) {
	type layout struct {
		wall uint64
		ext  int64
		loc  *time.Location
	}
	if unsafe.Sizeof(t) != unsafe.Sizeof(layout{}) {
		return t, false
	}
	s := t
	p := (*layout)(unsafe.Pointer(&s))
	if p.wall&(1<<63) == 0 {
		return t, false
	}
	p.wall = uint64(int64(p.wall) + int64(d/time.Second)<<30)
	if !s.Round(0).Equal(t.Round(0).Add(d)) || s.Sub(t) != 0 {
		return t, false
	}
	return s, true
}

// TestHostile9TimeSleepUntilWallClockStepped: a SleepUntil deadline without a monotonic
// reading (t.Round(0), a time from time.Date, Parse or Unix) is compared with the wall
// clock as it reads when the sleep starts, as Go's time.Until and timers do, not with
// the wall reading taken when the runtime started: after the system clock is stepped
// forward by an hour, SleepUntil(time.Now().Round(0).Add(time.Second)) lasts a second,
// not an hour and a second. (The runtime is a bare value, never started, so its start
// time can carry a stale wall reading without racing with workers.)
func TestHostile9TimeSleepUntilWallClockStepped(t *testing.T) {
	start, ok := shiftWallH9(time.Now(), -time.Hour)
	if !ok {
		t.Skip("time.Time layout is not the one this test knows")
	}
	rt := &Runtime{start: start}
	rt.timers.init()
	rt.timers.parkedUntil.Store(0) // no worker to wake
	cx := &Context{rt: rt, budget: unlimitedBudget}
	s := SleepUntil(time.Now().Round(0).Add(time.Second))
	if _, ready := s.Poll(cx); ready {
		t.Fatal("SleepUntil(now+1s) ready at once")
	}
	defer s.Drop()
	left := time.Duration(s.entry.deadline)*time.Millisecond - rt.elapsed()
	if left > 10*time.Minute {
		t.Fatalf("SleepUntil(wall now + 1s) after a wall clock step of +1h sleeps %v", left)
	}
	// A deadline with a monotonic reading ignores the wall clock altogether.
	m := SleepUntil(time.Now().Add(time.Second))
	if _, ready := m.Poll(cx); ready {
		t.Fatal("SleepUntil(monotonic now+1s) ready at once")
	}
	defer m.Drop()
	if left := time.Duration(m.entry.deadline)*time.Millisecond - rt.elapsed(); left > 10*time.Minute || left < 0 {
		t.Fatalf("SleepUntil(monotonic now + 1s) sleeps %v", left)
	}
}
