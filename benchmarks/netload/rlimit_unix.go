//go:build unix

package netload

import (
	"fmt"
	"syscall"
)

// raiseNoFileLimit raises the open-file soft limit to the hard limit and returns it.
// Go raises it at startup already, but restores the original soft limit in the
// processes os/exec starts; the holder calls this too.
func raiseNoFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("netload: getrlimit(RLIMIT_NOFILE): %w", err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, fmt.Errorf("netload: setrlimit(RLIMIT_NOFILE, %d): %w", lim.Max, err)
		}
	}
	return uint64(lim.Cur), nil
}
