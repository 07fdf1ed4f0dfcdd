package blitzio

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
)

// TestErrTimeoutIsDeadlineErrors: ErrTimeout, what a Timeout or Deadline that ran out
// reports, matches both deadline errors Go code checks for: context.DeadlineExceeded
// (context code) and os.ErrDeadlineExceeded (what a net.Conn's deadline gives, which
// code written for package net checks with errors.Is), and is a net.Error timeout.
func TestErrTimeoutIsDeadlineErrors(t *testing.T) {
	if !errors.Is(ErrTimeout, context.DeadlineExceeded) {
		t.Error("errors.Is(ErrTimeout, context.DeadlineExceeded) = false")
	}
	if !errors.Is(ErrTimeout, os.ErrDeadlineExceeded) {
		t.Error("errors.Is(ErrTimeout, os.ErrDeadlineExceeded) = false")
	}
	var ne net.Error
	if !errors.As(ErrTimeout, &ne) || !ne.Timeout() {
		t.Error("ErrTimeout is not a net.Error whose Timeout() is true")
	}
	if errors.Is(ErrTimeout, context.Canceled) || errors.Is(ErrTimeout, os.ErrClosed) {
		t.Error("ErrTimeout matches an unrelated error")
	}
}
