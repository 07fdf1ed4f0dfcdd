//go:build !linux

package blitzio

// readNoWait has no non-blocking file read outside Linux: every read goes to the
// blocking pool.
func readNoWait(*Context, *blockingIO, []byte, int64) (int, bool) { return 0, false }

// closeCannotBlock is never asked outside Linux (no File is opened with closeInline).
func (b *blockingIO) closeCannotBlock() bool { return false }

// directIO reports false: only Linux has non-blocking reads for O_DIRECT to rule out.
func directIO(int) bool { return false }
