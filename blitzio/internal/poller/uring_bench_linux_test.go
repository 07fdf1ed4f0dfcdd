//go:build linux

package poller

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkUringReadiness: 64 registered socketpairs; each iteration makes all of them
// readable (64 writes), collects the 64 readiness events and drains the sockets (64
// reads). "io_uring" polls through the ring (multishot poll CQEs); "epoll" is the same
// loop on a raw edge-triggered epoll instance, the baseline in the same run.
func BenchmarkUringReadiness(b *testing.B) {
	const n = 64
	setup := func(b *testing.B) (rd, wr []int) {
		for range n {
			x, y := socketpair(b)
			b.Cleanup(func() { unix.Close(x); unix.Close(y) })
			rd, wr = append(rd, x), append(wr, y)
		}
		return rd, wr
	}
	one := []byte{1}
	buf := make([]byte, 16)
	b.Run("io_uring", func(b *testing.B) {
		r := newTestUring(b, IOUringConfig{Entries: 256})
		rd, wr := setup(b)
		for i, fd := range rd {
			r.Register(fd, uint64(i), Read)
		}
		evs := make([]Event, 128)
		b.ReportAllocs()
		for b.Loop() {
			for _, fd := range wr {
				unix.Write(fd, one)
			}
			for got := 0; got < n; {
				k, err := r.Poll(evs, time.Second)
				if err != nil {
					b.Fatal(err)
				}
				got += k
			}
			for _, fd := range rd {
				unix.Read(fd, buf)
			}
		}
	})
	b.Run("epoll", func(b *testing.B) {
		ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Close(ep)
		rd, wr := setup(b)
		for i, fd := range rd {
			ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(i)}
			unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev)
		}
		evs := make([]unix.EpollEvent, 128)
		b.ReportAllocs()
		for b.Loop() {
			for _, fd := range wr {
				unix.Write(fd, one)
			}
			for got := 0; got < n; {
				k, err := unix.EpollWait(ep, evs, 1000)
				if err != nil && err != unix.EINTR {
					b.Fatal(err)
				}
				got += max(k, 0)
			}
			for _, fd := range rd {
				unix.Read(fd, buf)
			}
		}
	})
}

// BenchmarkUringSubmitBatch: k one-byte sends per io_uring_enter (queued, then one Poll
// submits them and reaps the completions), against k write system calls. ns/op is per
// batch; the ns/send metric divides it by k.
func BenchmarkUringSubmitBatch(b *testing.B) {
	one := []byte{1}
	for _, k := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("io_uring/k=%d", k), func(b *testing.B) {
			r := newTestUring(b, IOUringConfig{Entries: 128})
			x, y := socketpair(b)
			defer unix.Close(x)
			defer unix.Close(y)
			evs := make([]Event, 128)
			buf := make([]byte, 4096)
			b.ReportAllocs()
			for b.Loop() {
				for range k {
					r.Send(x, 1, one)
				}
				for got := 0; got < k; {
					n, err := r.Poll(evs, time.Second)
					if err != nil {
						b.Fatal(err)
					}
					got += n
				}
				unix.Read(y, buf)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*k), "ns/send")
		})
		b.Run(fmt.Sprintf("write/k=%d", k), func(b *testing.B) {
			x, y := socketpair(b)
			defer unix.Close(x)
			defer unix.Close(y)
			buf := make([]byte, 4096)
			b.ReportAllocs()
			for b.Loop() {
				for range k {
					unix.Write(x, one)
				}
				unix.Read(y, buf)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*k), "ns/send")
		})
	}
}
