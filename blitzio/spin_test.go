package blitzio

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// TestSpinModelMatchesTaskState keeps spin/taskstate.pml in step with taskstate.go: the
// model's state encoding must be the one the code uses.
func TestSpinModelMatchesTaskState(t *testing.T) {
	for _, file := range []string{"spin/taskstate.pml", "spin/taskstate.broken.pml"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]uint64{
			"IDLE": stIdle, "SCHEDULED": stScheduled, "RUNNING": stRunning, "COMPLETE": stComplete,
			"LIFEMASK": lifeMask, "CANCELLED": flagCancelled, "NOTIFIED": flagNotified, "JOIN_WAKER": flagJoinWaker,
		}
		for name, v := range want {
			re := regexp.MustCompile(fmt.Sprintf(`(?m)^#define %s +(\d+)$`, name))
			m := re.FindSubmatch(src)
			if m == nil {
				t.Errorf("%s: no #define %s", file, name)
				continue
			}
			if got, _ := strconv.ParseUint(string(m[1]), 10, 64); got != v {
				t.Errorf("%s: %s = %d, taskstate.go has %d", file, name, got, v)
			}
		}
	}
}
