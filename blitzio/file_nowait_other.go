//go:build !linux

package blitzio

import "os"

// readNoWait has no non-blocking file read outside Linux: every read goes to the
// blocking pool.
func readNoWait(*os.File, *noWait, []byte, int64) (int, bool, error) { return 0, false, nil }
