package poller

import (
	"fmt"
	"runtime"
)

func unsupported(name string) error {
	return fmt.Errorf("%w: %s on %s", ErrUnsupported, name, runtime.GOOS)
}
