//go:build !linux

package blitzio

import "os"

// readFileNoWait has no non-blocking whole-file read outside Linux: ReadFile runs on
// the blocking pool.
func readFileNoWait(string) ([]byte, bool, error) { return nil, false, nil }

// openNoWait has no non-blocking open outside Linux: OpenFile runs on the blocking
// pool.
func openNoWait(string, int) (*os.File, int, bool, error) { return nil, -1, false, nil }
