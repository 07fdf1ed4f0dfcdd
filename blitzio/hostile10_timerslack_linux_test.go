package blitzio

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostile10TimerSlackReachesThreads: on Linux, after workers park, some thread of the
// process has the workers' timer slack (read from /proc, as a user would check it).
func TestHostile10TimerSlackReachesThreads(t *testing.T) {
	rt := newRT(t, Config{Workers: 2})
	parkMany(t, rt, 10)
	waitFor(t, "a thread with the workers' timer slack", func() bool {
		// A thread's slack is in /proc/<tid>/timerslack_ns (not under task/).
		tasks, err := filepath.Glob("/proc/self/task/*")
		if err != nil || len(tasks) == 0 {
			t.Skipf("no /proc/self/task: %v", err)
		}
		if _, err := os.Stat("/proc/self/timerslack_ns"); err != nil {
			t.Skipf("no timerslack_ns in /proc: %v", err)
		}
		for _, p := range tasks {
			b, err := os.ReadFile(filepath.Join("/proc", filepath.Base(p), "timerslack_ns"))
			if err == nil && strings.TrimSpace(string(b)) == "1000" {
				return true
			}
		}
		return false
	})
}
