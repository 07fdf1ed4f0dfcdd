//go:build linux || darwin || freebsd

package httpserve

import (
	"net/http"
	"testing"
	"time"
)

// TestAppendDateFollowsWallClock: the Date value, cached per second and checked against
// the monotonic clock, is always the wall-clock second of a moment between the call's
// start and end, across several second boundaries.
func TestAppendDateFollowsWallClock(t *testing.T) {
	end := time.Now().Add(1500 * time.Millisecond)
	if testing.Short() {
		end = time.Now().Add(300 * time.Millisecond)
	}
	calls := 0
	for time.Now().Before(end) {
		before := time.Now().Truncate(time.Second)
		v := string(appendDate(nil))
		after := time.Now()
		got, err := http.ParseTime(v)
		if err != nil {
			t.Fatalf("Date %q does not parse: %v", v, err)
		}
		if got.Before(before) || got.After(after) {
			t.Fatalf("Date %q is outside [%v, %v]", v, before.UTC(), after.UTC())
		}
		calls++
		time.Sleep(time.Millisecond)
	}
	if calls == 0 {
		t.Fatal("no call made")
	}
}
