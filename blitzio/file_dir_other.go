//go:build !unix

package blitzio

import (
	"io/fs"
	"os"
	"syscall"
)

// openDir opens a directory for ReadDir; another kind of file fails with ENOTDIR, as
// os.ReadDir reports it.
func openDir(name string) (*os.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err == nil && !st.IsDir() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOTDIR}
	}
	return f, nil
}
