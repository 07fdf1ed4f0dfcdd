//go:build !(linux && amd64)

package blitzio

import "time"

// sinceProcStart is the monotonic time since procStart. Without a usable TSC it is a
// plain monotonic clock read.
func sinceProcStart() time.Duration { return time.Since(procStart) }
