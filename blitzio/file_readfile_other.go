//go:build !linux

package blitzio

// readFileNoWait has no non-blocking whole-file read outside Linux: ReadFile runs on
// the blocking pool.
func readFileNoWait(string) ([]byte, bool, error) { return nil, false, nil }
