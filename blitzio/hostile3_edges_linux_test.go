//go:build linux

package blitzio

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// ReadAt and WriteAt at offsets near math.MaxInt64, negative offsets and with empty
// buffers give what os.File's give, on both backends and in every BLITZIO_FILEIO mode.
func TestHostile3PositionedEdgesMatchOS(t *testing.T) {
	for _, be := range []Backend{BackendIOUring, BackendEpoll} {
		for _, mode := range []string{"auto", "ring", "pool", "nowait"} {
			t.Run(be.String()+"/"+mode, func(t *testing.T) {
				t.Setenv(fileIOEnv, mode)
				rt, err := New(Config{Workers: 2, Backend: be})
				if err != nil {
					t.Skip(err)
				}
				defer rt.Close()
				dir := t.TempDir()
				name := filepath.Join(dir, "d")
				os.WriteFile(name, []byte("hello world"), 0o644)
				f := must(t, rt, OpenFile(name, os.O_RDWR, 0))
				of, _ := os.OpenFile(name, os.O_RDWR, 0)
				defer of.Close()
				type c struct {
					n   int
					off int64
				}
				for _, cc := range []c{{10, math.MaxInt64 - 1}, {1, math.MaxInt64}, {0, math.MaxInt64}, {0, 100}, {0, -1}, {5, -1}, {4, 9}, {3, math.MaxInt64 - 3}} {
					p := make([]byte, cc.n)
					q := make([]byte, cc.n)
					r := run(t, rt, f.ReadAt(p, cc.off))
					n, err := of.ReadAt(q, cc.off)
					got := fmt.Sprintf("%d %v", r.Value, r.Err)
					want := fmt.Sprintf("%d %v", n, err)
					if got != want {
						t.Errorf("ReadAt(%d, %d) = %s, os says %s", cc.n, cc.off, got, want)
					}
					r = run(t, rt, f.WriteAt(p, cc.off))
					n, err = of.WriteAt(q, cc.off)
					got = fmt.Sprintf("%d %v", r.Value, r.Err)
					want = fmt.Sprintf("%d %v", n, err)
					if got != want {
						t.Errorf("WriteAt(%d, %d) = %s, os says %s", cc.n, cc.off, got, want)
					}
				}
			})
		}
	}
}
