//go:build linux

package poller

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// A receive into a kernel-chosen provided buffer: nothing is allocated for the receive
// while it waits, and the buffer goes back to the ring with Release.
func ExampleNewIOUringConfig() {
	p, err := NewIOUringConfig(IOUringConfig{Entries: 64, Buffers: 16, BufferSize: 2048})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	c := p.(Completer)
	if c.Features()&ProvidedBuffers == 0 {
		fmt.Println("kernel without provided-buffer rings")
		return
	}
	fds, _ := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])

	c.Recv(fds[0], 7) // queued; submitted by the next Poll
	unix.Write(fds[1], []byte("hello, ring"))
	events := make([]Event, 8)
	for {
		n, _ := c.Poll(events, time.Second)
		if n == 0 {
			continue
		}
		ev := events[0]
		fmt.Printf("token %d: %q\n", ev.Token, c.Buffer(ev.Buf, int(ev.Res)))
		c.Release(ev.Buf)
		break
	}
	// On a kernel with io_uring this prints token 7: "hello, ring"; the output is not
	// checked, since kernels that refuse io_uring print something else.
}
