//go:build linux

package blitzio

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// BenchmarkRandomReadWarm is the loop of blitzbench's fs/RandomRead4K, small enough to
// profile here: 64 readers of 16 random 4 KiB page-cache-warm reads each, every reader
// making its own buffer, the file opened and closed each iteration as there. The
// readers are tasks reading with File.AwaitReadAt (blitzio), tasks awaiting ReadAt's
// future (blitzio-future), or goroutines with os.File.ReadAt. Besides the time per read
// it reports the process's CPU time per read, which a busy shared machine disturbs less.

const (
	benchReaders  = 64
	benchReads    = 16
	benchReadSize = 4096
)

// benchReadFixture makes a sparse 64 MiB file and random page offsets in it, and reads
// them once so that they are in the page cache.
func benchReadFixture(b *testing.B) (string, [][]int64) {
	b.Helper()
	name := filepath.Join(b.TempDir(), "data")
	const size = 64 << 20
	if err := os.WriteFile(name, make([]byte, 1<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Truncate(name, size); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	offsets := make([][]int64, benchReaders)
	f, err := os.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, benchReadSize)
	for i := range offsets {
		offsets[i] = make([]int64, benchReads)
		for j := range offsets[i] {
			offsets[i][j] = rng.Int64N(size/benchReadSize) * benchReadSize
			if _, err := f.ReadAt(buf, offsets[i][j]); err != nil {
				b.Fatal(err)
			}
		}
	}
	return name, offsets
}

// reportPerRead reports the time per read, and the process's CPU time per read since
// cpuStart (user and system, all threads: the cores' work, which a busy shared
// machine disturbs less than the elapsed time).
func reportPerRead(b *testing.B, cpuStart time.Duration) {
	reads := float64(b.N * benchReaders * benchReads)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/reads, "ns/read")
	b.ReportMetric(float64((processCPU()-cpuStart).Nanoseconds())/reads, "cpu-ns/read")
}

func BenchmarkRandomReadWarm(b *testing.B) {
	// Each reader's body makes its buffer itself, as a task would: with AwaitReadAt it
	// can stay on the stack, with ReadAt's future (which holds it) it cannot.
	b.Run("blitzio-future", func(b *testing.B) {
		benchTaskReads(b, func(co *Co, f *File, offs []int64) error {
			buf := make([]byte, benchReadSize)
			for _, off := range offs {
				if r := Await(co, f.ReadAt(buf, off)); r.Err != nil {
					return r.Err
				}
			}
			return nil
		})
	})
	b.Run("blitzio", func(b *testing.B) {
		benchTaskReads(b, func(co *Co, f *File, offs []int64) error {
			buf := make([]byte, benchReadSize)
			for _, off := range offs {
				if _, err := f.AwaitReadAt(co, buf, off); err != nil {
					return err
				}
			}
			return nil
		})
	})
	b.Run("goroutines", func(b *testing.B) {
		name, offsets := benchReadFixture(b)
		b.ReportAllocs()
		cpu := processCPU() // idle_linux_test.go's
		for b.Loop() {
			f, err := os.Open(name)
			if err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			for _, offs := range offsets {
				wg.Go(func() {
					buf := make([]byte, benchReadSize)
					for _, off := range offs {
						if _, err := f.ReadAt(buf, off); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			f.Close()
		}
		reportPerRead(b, cpu)
	})
}

// benchTaskReads runs BenchmarkRandomReadWarm's loop with a task per reader, each
// running read over its offsets.
func benchTaskReads(b *testing.B, read func(co *Co, f *File, offs []int64) error) {
	b.Setenv(fileIOEnv, "auto")
	name, offsets := benchReadFixture(b)
	rt, err := New(Config{Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	hs := make([]JoinHandle[error], benchReaders)
	b.ReportAllocs()
	cpu := processCPU() // idle_linux_test.go's
	for b.Loop() {
		r, err := BlockOn(rt, Open(name))
		if err != nil || r.Err != nil {
			b.Fatal(err, r.Err)
		}
		f := r.Value
		for i, offs := range offsets {
			hs[i] = Spawn(rt, Async(func(co *Co) error { return read(co, f, offs) }))
		}
		for _, h := range hs {
			if err, jerr := h.Wait(); err != nil || jerr != nil {
				b.Fatal(err, jerr)
			}
		}
		BlockOn(rt, f.Close())
	}
	reportPerRead(b, cpu)
}

// BenchmarkBlockOnOpenClose: a file opened and closed from plain Go code through BlockOn
// (which runs both calls on the calling goroutine, see callerBlocks), beside os.Open and
// Close; "nested" hides the futures from BlockOn, as a combinator would, so they take
// the ways a runtime runs them (the worker's non-blocking open, or the blocking pool).
func BenchmarkBlockOnOpenClose(b *testing.B) {
	name := filepath.Join(b.TempDir(), "f")
	if err := os.WriteFile(name, []byte("x"), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Setenv(fileIOEnv, "auto")
	blitz := func(wrap func(Future[Result[*File]]) Future[Result[*File]], wrapClose func(Future[Result[struct{}]]) Future[Result[struct{}]]) func(b *testing.B) {
		return func(b *testing.B) {
			rt, err := New(Config{Workers: 2})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			b.ReportAllocs()
			for b.Loop() {
				f, err := BlockOn(rt, wrap(Open(name)))
				if err != nil || f.Err != nil {
					b.Fatal(err, f.Err)
				}
				if c, err := BlockOn(rt, wrapClose(f.Value.Close())); err != nil || c.Err != nil {
					b.Fatal(err, c.Err)
				}
			}
		}
	}
	b.Run("blitzio", blitz(func(f Future[Result[*File]]) Future[Result[*File]] { return f },
		func(f Future[Result[struct{}]]) Future[Result[struct{}]] { return f }))
	b.Run("blitzio-nested", blitz(func(f Future[Result[*File]]) Future[Result[*File]] { return nested[Result[*File]]{f} },
		func(f Future[Result[struct{}]]) Future[Result[struct{}]] { return nested[Result[struct{}]]{f} }))
	b.Run("os", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f, err := os.Open(name)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}
