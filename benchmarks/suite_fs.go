package benchmarks

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/blitzgo/blitz/blitzio"
)

// The fs suite measures blitzio's files and child processes beside the goroutine
// programs a Go user would write: os.File.ReadAt from goroutines, os.ReadFile from
// goroutines, os/exec. blitzio has three ways to read a file (see blitzio.File): a
// non-blocking read on the worker (preadv2 RWF_NOWAIT, page-cache hits), an io_uring
// operation (Linux, io_uring backend), and its blocking pool; the random-read cases
// measure each alone (BLITZIO_FILEIO=ring, pool, nowait) beside the default, which
// combines the first two.

func init() {
	Register(Suite{
		Name:  "fs",
		Title: "blitzio files and processes (2 workers) against goroutines with package os and os/exec",
		Cases: fsCases,
	})
}

const (
	fsReaders     = 64
	fsReadsPerRdr = 16
	fsReadSize    = 4096
)

// fsFixture is a sparse file of size bytes (made by Truncate: no gigabyte written on a
// shared machine), with a pattern in its first MiB, removed at the end of the benchmark
// that made it. Reads of the holes are served from zeroed page-cache pages once touched,
// so after the first pass every read is a page-cache hit, as the case says.
func fsFixture(b *testing.B, size int64) string {
	b.Helper()
	name := filepath.Join(b.TempDir(), "data")
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i * 31)
	}
	if _, err := f.Write(chunk); err != nil {
		b.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return name
}

// fsWithFileIO runs bench with BLITZIO_FILEIO set to mode (read by blitzio when a File
// is opened): the ways blitzio can read a file, measured side by side.
func fsWithFileIO(mode string, bench func(b *testing.B)) func(b *testing.B) {
	return func(b *testing.B) {
		old, had := os.LookupEnv("BLITZIO_FILEIO")
		os.Setenv("BLITZIO_FILEIO", mode)
		defer func() {
			if had {
				os.Setenv("BLITZIO_FILEIO", old)
			} else {
				os.Unsetenv("BLITZIO_FILEIO")
			}
		}()
		bench(b)
	}
}

// fsSmallFiles makes n files of 1 KiB in a fresh directory.
func fsSmallFiles(b *testing.B, n int) []string {
	b.Helper()
	dir := b.TempDir()
	names := make([]string, n)
	data := make([]byte, 1024)
	for i := range names {
		names[i] = filepath.Join(dir, fmt.Sprintf("f%05d", i))
		if err := os.WriteFile(names[i], data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return names
}

func fsCases(cfg Config) []Case {
	fileSize := int64(1 << 30)
	smallFiles := 10_000
	spawns := 1_000
	if cfg.Quick {
		fileSize, smallFiles, spawns = 64<<20, 1_000, 100
	}
	// randomRead measures read over fsReaders readers of fsReadsPerRdr offsets each.
	// Warm: the same random offsets every iteration, in the page cache after the
	// first. Miss: offsets no iteration has read before (page index stepping by 257,
	// which is prime to the page count, so none repeats within 2^18 reads), so every
	// read misses the page cache; the file's holes are zero-filled by the file system
	// without a disk access, so the case measures each way's miss path, not the disk.
	randomRead := func(miss bool) func(b *testing.B, read func(name string, offsets [][]int64)) {
		return func(b *testing.B, read func(name string, offsets [][]int64)) {
			name := fsFixture(b, fileSize)
			pages := fileSize / fsReadSize
			offsets := make([][]int64, fsReaders)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range offsets {
				offsets[i] = make([]int64, fsReadsPerRdr)
				for j := range offsets[i] {
					offsets[i][j] = rng.Int64N(pages) * fsReadSize
				}
			}
			if !miss {
				// Warm: bring the pages in before the clock starts.
				f, err := os.Open(name)
				if err != nil {
					b.Fatal(err)
				}
				buf := make([]byte, fsReadSize)
				for _, offs := range offsets {
					for _, off := range offs {
						f.ReadAt(buf, off)
					}
				}
				f.Close()
			}
			// The first MiB holds data: a miss run starts past it.
			next := int64(1 << 20 / fsReadSize)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if miss {
					b.StopTimer()
					for i := range offsets {
						for j := range offsets[i] {
							offsets[i][j] = (next * 257 % pages) * fsReadSize
							next++
						}
					}
					b.StartTimer()
				}
				read(name, offsets)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*fsReaders*fsReadsPerRdr), "ns/read")
		}
	}
	// blitzRandomRead reads with File.AwaitReadAt (the form for a task's loop of reads),
	// or with Await(co, f.ReadAt(...)) when future is set.
	blitzRandomRead := func(miss, future bool) func(b *testing.B) {
		return func(b *testing.B) {
			rt := bioRuntime(b)
			randomRead(miss)(b, func(name string, offsets [][]int64) {
				f, err := blitzio.BlockOn(rt, blitzio.Open(name))
				if err != nil || f.Err != nil {
					b.Fatal(err, f.Err)
				}
				hs := make([]blitzio.JoinHandle[error], len(offsets))
				for i, offs := range offsets {
					// Two bodies, not one with a branch: the future holds buf, which
					// therefore escapes to the heap, while AwaitReadAt's task keeps it on
					// its stack, as the task a user writes for either form would.
					var body func(co *blitzio.Co) error
					if future {
						body = func(co *blitzio.Co) error {
							buf := make([]byte, fsReadSize)
							for _, off := range offs {
								if err := blitzio.Await(co, f.Value.ReadAt(buf, off)).Err; err != nil {
									return err
								}
							}
							return nil
						}
					} else {
						body = func(co *blitzio.Co) error {
							buf := make([]byte, fsReadSize)
							for _, off := range offs {
								if _, err := f.Value.AwaitReadAt(co, buf, off); err != nil {
									return err
								}
							}
							return nil
						}
					}
					hs[i] = blitzio.Spawn(rt, blitzio.Async(body))
				}
				for _, h := range hs {
					if err, jerr := h.Wait(); err != nil || jerr != nil {
						b.Fatal(err, jerr)
					}
				}
				blitzio.BlockOn(rt, f.Value.Close())
			})
		}
	}
	goRandomRead := func(miss bool) func(b *testing.B) {
		return func(b *testing.B) {
			randomRead(miss)(b, func(name string, offsets [][]int64) {
				f, err := os.Open(name)
				if err != nil {
					b.Fatal(err)
				}
				var wg sync.WaitGroup
				for _, offs := range offsets {
					wg.Go(func() {
						buf := make([]byte, fsReadSize)
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
			})
		}
	}
	randomCase := func(name, note string, miss bool) Case {
		c := Case{
			Name:   name,
			Note:   fmt.Sprintf("%d tasks x %d random 4 KiB reads (File.AwaitReadAt; goroutines: os.File.ReadAt) from a %d MiB file (%s)", fsReaders, fsReadsPerRdr, fileSize>>20, note),
			Metric: "ns/read",
			Ours:   Impl{"blitzio", fsWithFileIO("auto", blitzRandomRead(miss, false))},
			Baselines: []Impl{
				{"goroutines", goRandomRead(miss)},
				// The same reads through ReadAt's future: one allocated per read, and the
				// task's buffer on the heap (the future holds it).
				{"blitzio ReadAt future", fsWithFileIO("auto", blitzRandomRead(miss, true))},
				// The ways blitzio can do the reads, each alone: io_uring only, the
				// blocking pool only, preadv2(RWF_NOWAIT) on the worker then the pool.
				{"blitzio ring", fsWithFileIO("ring", blitzRandomRead(miss, false))},
				{"blitzio pool", fsWithFileIO("pool", blitzRandomRead(miss, false))},
				{"blitzio nowait", fsWithFileIO("nowait", blitzRandomRead(miss, false))},
			},
			// Every row but goroutines is blitzio itself: our variants, not outside code
			// (the report counts only baselines as comparisons against outside code).
			Roles: map[string]Role{
				"blitzio ReadAt future": RoleVariant, "blitzio ring": RoleVariant,
				"blitzio pool": RoleVariant, "blitzio nowait": RoleVariant,
			},
		}
		if !miss { // the target is the warm case; the miss case informs the choice
			c.Targets = []Target{TimesBetter("goroutines", 1)}
		}
		return c
	}
	blitzReadSmall := func(b *testing.B) {
		rt := bioRuntime(b)
		names := fsSmallFiles(b, smallFiles)
		hs := make([]blitzio.JoinHandle[blitzio.Result[[]byte]], len(names))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			for i, n := range names {
				hs[i] = blitzio.Spawn(rt, blitzio.ReadFile(n))
			}
			for _, h := range hs {
				if r, err := h.Wait(); err != nil || r.Err != nil || len(r.Value) != 1024 {
					b.Fatal(err, r.Err)
				}
			}
		}
	}
	return []Case{
		randomCase("RandomRead4K", "page cache warm", false),
		randomCase("RandomRead4KMiss", "every read a page-cache miss", true),
		{
			Name: "ReadSmallFiles",
			Note: fmt.Sprintf("read %d files of 1 KiB at once: a task (blitzio.ReadFile) or a goroutine (os.ReadFile) per file", smallFiles),
			Ours: Impl{"blitzio", fsWithFileIO("auto", blitzReadSmall)},
			Baselines: []Impl{{"goroutines", func(b *testing.B) {
				names := fsSmallFiles(b, smallFiles)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					var wg sync.WaitGroup
					for _, n := range names {
						wg.Go(func() {
							if data, err := os.ReadFile(n); err != nil || len(data) != 1024 {
								b.Error(err)
							}
						})
					}
					wg.Wait()
				}
			}},
				// ReadFile on the blocking pool only (no attempt on the worker first).
				{"blitzio pool", fsWithFileIO("pool", blitzReadSmall)},
			},
			Roles:   map[string]Role{"blitzio pool": RoleVariant},
			Targets: []Target{TimesBetter("goroutines", 1)},
		},
		{
			Name: "SpawnWaitTrue",
			Note: fmt.Sprintf("start %d `true` processes at once and wait for all", spawns),
			Ours: Impl{"blitzio", func(b *testing.B) {
				rt := bioRuntime(b)
				hs := make([]blitzio.JoinHandle[error], spawns)
				b.ReportAllocs()
				for b.Loop() {
					for i := range hs {
						hs[i] = blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) error {
							child, err := blitzio.Command("true").Stdin(blitzio.Null).Stdout(blitzio.Null).Stderr(blitzio.Null).Spawn()
							if err != nil {
								return err
							}
							return blitzio.Await(co, child.Wait()).Err
						}))
					}
					for _, h := range hs {
						if err, jerr := h.Wait(); err != nil || jerr != nil {
							b.Fatal(err, jerr)
						}
					}
				}
			}},
			Baselines: []Impl{{"os/exec", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var wg sync.WaitGroup
					for range spawns {
						wg.Go(func() {
							if err := exec.Command("true").Run(); err != nil {
								b.Error(err)
							}
						})
					}
					wg.Wait()
				}
			}}},
		},
	}
}
