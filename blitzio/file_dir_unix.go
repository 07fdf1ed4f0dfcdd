//go:build unix

package blitzio

import (
	"os"
	"syscall"
)

// openDir opens a directory for ReadDir as os.ReadDir does: O_DIRECTORY makes any other
// kind of file fail with ENOTDIR without being opened (a FIFO's open would wait for a
// writer).
func openDir(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY, 0)
}
