// Package stream is the toolkit for byte streams in blitzio tasks, the counterpart of
// Tokio's AsyncReadExt/AsyncWriteExt, BufReader/BufWriter and tokio-util's codecs. It
// works on any blitzio.AsyncReader and blitzio.AsyncWriter: TCP and Unix streams, the
// in-memory Duplex pipe, and the buffered readers and writers of this package.
//
//   - Futures for one operation: Read, ReadFull, WriteAll, Copy, CopyBidirectional.
//   - Buffering: BufReader (ReadLine, ReadUntil, Peek-style Fill/Consume) and BufWriter
//     (Write, Flush).
//   - Framing: a Decoder splits bytes into frames and an Encoder writes them;
//     FrameReader and FrameWriter drive them over a stream. LinesCodec and
//     LengthDelimitedCodec are the two framings most protocols need; the latter's
//     fields describe length headers of any layout (offset, 1 to 8 bytes, either byte
//     order, adjusted lengths, skipped or kept headers), as tokio-util's builder does.
//   - Duplex: a connected pair of in-memory streams for tests (like net.Pipe, with a
//     buffer).
//
// Timeouts compose: blitzio.TryTimeout(d, stream.ReadFull(r, p)) reads with a deadline,
// and an expired read leaves the stream as it was for every future marked
// cancellation-safe below.
//
// The futures that BufReader, BufWriter, FrameReader and FrameWriter return are owned by
// them and reused by the next call, so reading a line or a frame allocates nothing: poll
// one operation at a time on each of them, as on a Go bufio.Reader.
package stream
