package blitzio

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// checkSpinDefines fails unless every file defines each name with the value the code uses.
func checkSpinDefines(t *testing.T, files []string, want map[string]uint64) {
	t.Helper()
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range want {
			re := regexp.MustCompile(fmt.Sprintf(`(?m)^#define %s +(\d+)$`, name))
			m := re.FindSubmatch(src)
			if m == nil {
				t.Errorf("%s: no #define %s", file, name)
				continue
			}
			if got, _ := strconv.ParseUint(string(m[1]), 10, 64); got != v {
				t.Errorf("%s: %s = %d, the code has %d", file, name, got, v)
			}
		}
	}
}

// TestSpinModelMatchesTimerQueue keeps spin/timerqueue.pml (the pending-stack timer
// registration protocol of timer.go) in step with the code's entry states.
func TestSpinModelMatchesTimerQueue(t *testing.T) {
	checkSpinDefines(t, []string{"spin/timerqueue.pml", "spin/timerqueue.broken.pml"}, map[string]uint64{
		"T_IDLE": uint64(tsIdle), "T_QUEUED": uint64(tsQueued), "T_CANCELLED": uint64(tsCancelled),
		"T_WHEEL": uint64(tsWheel), "T_FIRED": uint64(tsFired),
	})
}

// TestSpinModelMatchesTaskState keeps spin/taskstate.pml in step with taskstate.go: the
// model's state encoding must be the one the code uses.
func TestSpinModelMatchesTaskState(t *testing.T) {
	checkSpinDefines(t, []string{"spin/taskstate.pml", "spin/taskstate.broken.pml"}, map[string]uint64{
		"IDLE": stIdle, "SCHEDULED": stScheduled, "RUNNING": stRunning, "COMPLETE": stComplete,
		"LIFEMASK": lifeMask, "CANCELLED": flagCancelled, "NOTIFIED": flagNotified, "JOIN_WAKER": flagJoinWaker,
	})
}
