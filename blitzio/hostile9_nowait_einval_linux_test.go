//go:build linux

package blitzio

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestHostile9NoWaitSurvivesEINVAL: a ReadAt whose range the kernel refuses with EINVAL
// (an offset so near math.MaxInt64 that offset+len overflows) must not switch the
// worker's page-cache reads off for the whole file: EINVAL says this call was bad, not
// that the file cannot do non-blocking reads. Later cached reads must still be made on
// the worker.
func TestHostile9NoWaitSurvivesEINVAL(t *testing.T) {
	t.Setenv(fileIOEnv, "auto")
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	name := filepath.Join(t.TempDir(), "f")
	data := make([]byte, 1<<16)
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f := must(t, rt, Open(name))
	defer BlockOn(rt, f.Close())
	if !f.b.nw.on {
		t.Skip("non-blocking reads are not used for this file here")
	}
	if _, ok := readNoWait(nil, f.b, make([]byte, 4096), 0); !ok {
		t.Skip("preadv2(RWF_NOWAIT) does not work here")
	}
	for i := 0; i < 3; i++ {
		// What the future reports is package os's business; only the worker's state
		// after the refused calls matters here.
		_, _ = BlockOn(rt, f.ReadAt(make([]byte, 4096), math.MaxInt64-100))
		_, _ = readNoWait(nil, f.b, make([]byte, 4096), math.MaxInt64-100)
	}
	if f.b.nw.off.Load() {
		t.Fatal("an EINVAL from one ReadAt switched the worker's non-blocking reads off for the whole file")
	}
	if n, ok := readNoWait(nil, f.b, make([]byte, 4096), 4096); !ok || n != 4096 {
		t.Fatalf("a cached read after the refused ones: (%d, %v), want (4096, true)", n, ok)
	}
}
