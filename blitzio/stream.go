package blitzio

// AsyncReader is a byte stream a task reads without blocking its worker: TCP and Unix
// streams, in-memory pipes, buffered readers. It is the poll form of io.Reader, as
// Tokio's AsyncRead is of std::io::Read; the futures and helpers of package
// blitzio/stream (Read, ReadFull, Copy, BufReader, codecs) work on any implementation.
//
// PollRead reads up to len(p) bytes into p. It returns (result, true) when it has an
// outcome: n > 0 bytes read with a nil error, or n == 0 with io.EOF at the end of the
// stream, or an error. It returns (zero, false) after arranging for cx.Waker() to be
// woken when reading can make progress, having consumed nothing. With len(p) == 0 it
// returns (0, nil) at once. Unlike io.Reader, it never returns bytes and an error
// together: an error or EOF noticed after some bytes were read is reported by the next
// call.
type AsyncReader interface {
	PollRead(cx *Context, p []byte) (Result[int], bool)
}

// AsyncWriter is a byte stream a task writes without blocking its worker: the poll form
// of io.Writer (Tokio's AsyncWrite).
//
// PollWrite writes some of p: (n, nil) with 1 <= n <= len(p) bytes accepted, or an
// error with n == 0; a short write is not an error (callers loop, or use
// stream.WriteAll). It returns (zero, false) after arranging a wake-up, having written
// nothing. With len(p) == 0 it returns (0, nil) at once. The writer must not retain p
// after returning.
type AsyncWriter interface {
	PollWrite(cx *Context, p []byte) (Result[int], bool)
}

// AsyncReadWriter groups AsyncReader and AsyncWriter: a bidirectional stream.
type AsyncReadWriter interface {
	AsyncReader
	AsyncWriter
}

// AsyncCloseWriter is implemented by streams that can shut down their write side while
// still reading (TCP's shutdown(SHUT_WR), an in-memory pipe): the peer reads EOF.
// stream.CopyBidirectional uses it to pass an EOF through.
type AsyncCloseWriter interface {
	CloseWrite() error
}
