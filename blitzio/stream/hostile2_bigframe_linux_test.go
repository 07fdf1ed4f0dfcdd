//go:build linux

package stream

import (
	"errors"
	"syscall"
	"testing"
)

// TestHostile2LengthDelimitedEncodeOver4GiB: with MaxFrameLength above 4 GiB, a frame of
// 4 GiB cannot be described by the 4-byte header; Encode must refuse it (ErrTooLong)
// rather than write a truncated length (0 here) followed by 4 GiB of payload. The frame
// is a reserved, untouched mapping: no memory is used unless Encode copies it.
func TestHostile2LengthDelimitedEncodeOver4GiB(t *testing.T) {
	const size = 1 << 32
	frame, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		t.Skip("cannot reserve 4 GiB of address space:", err)
	}
	defer syscall.Munmap(frame)
	dst, err := LengthDelimitedCodec{MaxFrameLength: 1 << 40}.Encode(nil, frame)
	if !errors.Is(err, ErrTooLong) || len(dst) != 0 {
		t.Fatalf("Encode of a 4 GiB frame: %d bytes, %v; want nothing and ErrTooLong", len(dst), err)
	}
}
