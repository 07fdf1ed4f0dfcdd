//go:build linux

package stress

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/stream"
)

// Servers written with package blitzio/stream under load: a binary protocol framed by
// stream.FrameReader and FrameWriter with LengthDelimitedCodec, and a text protocol
// read with stream.BufReader.ReadLine and answered through a stream.BufWriter that is
// flushed only when no request is left in the read buffer (so pipelined requests share
// a write). Clients pipeline their requests (a writer goroutine and a reader goroutine
// per connection), pause, disconnect part way, or send a line or frame over the
// server's limit. The server checks every request it decodes (its id, sequence number
// and checksum), the client checks every reply byte for byte.

// errMalformed is a request a codec server decoded but could not accept (a field that
// does not parse, a checksum that does not match): the last, truncated request of a
// client that disconnected part way, or a corrupt stream.
var errMalformed = errors.New("malformed request")

// fnv64 returns the FNV-1a hash of p.
func fnv64(p []byte) uint64 {
	h := fnv.New64a()
	h.Write(p)
	return h.Sum64()
}

// codecProto is one protocol of the codec scenario.
type codecProto struct {
	name    string
	handler connHandler
	// message returns request i of session p and the reply it must get, drawing the
	// request's body from src (the session's byte stream, consumed in order).
	message func(p sessionPlan, i int, src *rand.ChaCha8) (req, reply []byte)
	// readReply reads one reply.
	readReply func(br *bufio.Reader) ([]byte, error)
	// oversized is what a hostile session sends after its requests: more than the
	// server's limit, which the server must refuse with stream.ErrTooLong.
	oversized []byte
}

// Limits of the codec servers.
const (
	frameLimit = 256 << 10
	lineLimit  = 32 << 10
)

// drainAfterTooLong reads and discards what the client still sends after a refused
// request, until its end of stream, so that closing the connection sends a FIN (the
// replies already written reach the client) rather than an RST for unread bytes.
func drainAfterTooLong(co *blitzio.Co, c *blitzio.TCPStream, rep *connReport) {
	buf := make([]byte, 4<<10)
	for {
		n, err := blitzio.Await(co, c.Read(buf)).Get()
		rep.in += int64(n)
		if err != nil {
			return
		}
	}
}

// frameHandler serves the framed protocol: request frame = id | seq | FNV(body) | body
// (8 bytes each), reply = id | seq | FNV(reversed body) | reversed body.
func frameHandler(co *blitzio.Co, c *blitzio.TCPStream, _ int, rep *connReport) {
	fr := stream.NewFrameReader(c, stream.LengthDelimitedCodec{MaxFrameLength: frameLimit})
	fw := stream.NewFrameWriter(c, stream.LengthDelimitedCodec{MaxFrameLength: frameLimit})
	for {
		f, err := blitzio.Await(co, fr.Next()).Get()
		if err != nil {
			if err != io.EOF {
				rep.err = err
			}
			if errors.Is(err, stream.ErrTooLong) {
				drainAfterTooLong(co, c, rep)
			}
			return
		}
		rep.in += int64(4 + len(f))
		if len(f) < 24 {
			rep.err = fmt.Errorf("%w: frame %d of %d bytes", errMalformed, rep.frames, len(f))
			return
		}
		id, seq, sum, body := binary.BigEndian.Uint64(f), binary.BigEndian.Uint64(f[8:]), binary.BigEndian.Uint64(f[16:]), f[24:]
		if rep.frames == 0 {
			rep.id, rep.hasID = id, true
		}
		if id != rep.id || seq != uint64(rep.frames) || sum != fnv64(body) {
			rep.err = fmt.Errorf("%w: frame %d: id %#x seq %d (want %#x, %d), checksum ok %v",
				errMalformed, rep.frames, id, seq, rep.id, rep.frames, sum == fnv64(body))
			return
		}
		slices.Reverse(body)
		reply := make([]byte, 24, 24+len(body))
		copy(reply, f[:16])
		binary.BigEndian.PutUint64(reply[16:], fnv64(body))
		reply = append(reply, body...)
		if err := fw.Feed(reply); err != nil {
			rep.err = err
			return
		}
		if _, err := blitzio.Await(co, fw.Flush()).Get(); err != nil {
			rep.err = err
			return
		}
		rep.frames++
		rep.out += int64(4 + len(reply))
	}
}

// frameMessage is codecProto.message for the framed protocol.
func frameMessage(p sessionPlan, i int, src *rand.ChaCha8) (req, reply []byte) {
	body := make([]byte, p.sizes[i])
	src.Read(body)
	req = binary.BigEndian.AppendUint32(nil, uint32(24+len(body)))
	req = binary.BigEndian.AppendUint64(req, p.id)
	req = binary.BigEndian.AppendUint64(req, uint64(i))
	req = binary.BigEndian.AppendUint64(req, fnv64(body))
	req = append(req, body...)
	rev := slices.Clone(body)
	slices.Reverse(rev)
	reply = binary.BigEndian.AppendUint32(nil, uint32(24+len(rev)))
	reply = binary.BigEndian.AppendUint64(reply, p.id)
	reply = binary.BigEndian.AppendUint64(reply, uint64(i))
	reply = binary.BigEndian.AppendUint64(reply, fnv64(rev))
	return req, append(reply, rev...)
}

// readFrame reads one length-delimited frame, header included.
func readFrame(br *bufio.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > frameLimit {
		return nil, fmt.Errorf("%w: reply frame of %d bytes", errCorrupt, n)
	}
	f := make([]byte, 4+n)
	copy(f, hdr[:])
	if _, err := io.ReadFull(br, f[4:]); err != nil {
		return nil, fmt.Errorf("reply frame of %d bytes: %w", n, err)
	}
	return f, nil
}

// lineHandler serves the text protocol: request "ID SEQ SUM TEXT" (ID and SUM, FNV of
// TEXT, in hex), reply "ID SEQ SUM' TEXT'" with TEXT' = upper-cased TEXT.
func lineHandler(co *blitzio.Co, c *blitzio.TCPStream, _ int, rep *connReport) {
	br := stream.NewBufReader(c, 0)
	br.SetMaxLine(lineLimit)
	bw := stream.NewBufWriter(c, 0)
	// The replies buffered must reach the client however the connection ends.
	defer func() {
		if _, err := blitzio.Await(co, bw.Flush()).Get(); err != nil && rep.err == nil {
			rep.err = err
		}
	}()
	for {
		line, err := blitzio.Await(co, br.ReadLine()).Get()
		if err != nil {
			if err != io.EOF {
				rep.err = err
			}
			if errors.Is(err, stream.ErrTooLong) {
				if _, ferr := blitzio.Await(co, bw.Flush()).Get(); ferr == nil {
					drainAfterTooLong(co, c, rep)
				}
			}
			return
		}
		rep.in += int64(len(line) + 1)
		reply, id, err := lineReply(line, rep.frames)
		if rep.frames == 0 && err == nil {
			rep.id, rep.hasID = id, true
		}
		if err == nil && id != rep.id {
			err = fmt.Errorf("%w: line %d has id %#x, want %#x", errMalformed, rep.frames, id, rep.id)
		}
		if err != nil {
			rep.err, rep.last = err, []byte(line)
			return
		}
		if _, err := blitzio.Await(co, bw.Write(reply)).Get(); err != nil {
			rep.err = err
			return
		}
		rep.frames++
		rep.out += int64(len(reply))
		if br.Buffered() == 0 { // no pipelined request waiting: send what is buffered
			if _, err := blitzio.Await(co, bw.Flush()).Get(); err != nil {
				rep.err = err
				return
			}
		}
	}
}

// lineReply checks request line number seq and returns its reply and its id.
func lineReply(line string, seq int) ([]byte, uint64, error) {
	f := strings.SplitN(line, " ", 4)
	if len(f) != 4 {
		return nil, 0, fmt.Errorf("%w: line %d has %d fields", errMalformed, seq, len(f))
	}
	id, err1 := strconv.ParseUint(f[0], 16, 64)
	s, err2 := strconv.Atoi(f[1])
	sum, err3 := strconv.ParseUint(f[2], 16, 64)
	if err := errors.Join(err1, err2, err3); err != nil || s != seq || sum != fnv64([]byte(f[3])) {
		return nil, 0, fmt.Errorf("%w: line %d (seq %q, %d bytes of text): fields %v, checksum ok %v",
			errMalformed, seq, f[1], len(f[3]), err, sum == fnv64([]byte(f[3])))
	}
	up := strings.ToUpper(f[3])
	return fmt.Appendf(nil, "%016x %d %016x %s\n", id, seq, fnv64([]byte(up)), up), id, nil
}

// lineMessage is codecProto.message for the text protocol: TEXT is letters and
// spaces drawn from src.
func lineMessage(p sessionPlan, i int, src *rand.ChaCha8) (req, reply []byte) {
	text := make([]byte, p.sizes[i])
	src.Read(text)
	for j, b := range text {
		if b %= 27; b == 26 {
			text[j] = ' '
		} else {
			text[j] = 'a' + b
		}
	}
	up := bytes.ToUpper(text)
	req = fmt.Appendf(nil, "%016x %d %016x %s\n", p.id, i, fnv64(text), text)
	reply = fmt.Appendf(nil, "%016x %d %016x %s\n", p.id, i, fnv64(up), up)
	return req, reply
}

// readLine reads one reply line, newline included.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadBytes('\n')
	if err == io.EOF && len(line) > 0 {
		return nil, fmt.Errorf("reply line cut after %d bytes: %w", len(line), io.ErrUnexpectedEOF)
	}
	return line, err
}

var codecProtos = []codecProto{
	{
		name: "frames", handler: frameHandler, message: frameMessage, readReply: readFrame,
		// A length header past the limit, then a few bytes.
		oversized: append(binary.BigEndian.AppendUint32(nil, frameLimit+1), make([]byte, 64)...),
	},
	{
		name: "lines", handler: lineHandler, message: lineMessage, readReply: readLine,
		oversized: bytes.Repeat([]byte("x"), lineLimit+10),
	},
}

// runCodecSession runs session p of protocol pr against addr: a writer sends the
// requests (pipelined, pausing as planned) while a reader checks each reply against
// the one expected. A clean session half-closes and requires every reply and then the
// end of stream; a hostile one sends pr.oversized after its requests and requires
// every reply to the requests before it and then the end of stream; a disconnecting
// one waits for the first reply (the server has its id), writes half of request
// abortAt and closes.
func runCodecSession(addr string, pr codecProto, p sessionPlan, hostile bool) error {
	c, err := dialLoopback(addr)
	if err != nil {
		return fmt.Errorf("%s session %#x: dial: %w", pr.name, p.id, err)
	}
	defer c.Close()
	replies := make(chan int, len(p.sizes)+1) // the count of replies checked, after each
	readDone := make(chan error, 1)
	go func() {
		br := bufio.NewReader(c)
		src := byteStream(p.id)
		limit := len(p.sizes)
		if p.abortAt >= 0 {
			limit = p.abortAt
		}
		for i := 0; ; i++ {
			got, err := pr.readReply(br)
			if err == io.EOF && (i == limit || p.abortAt >= 0) {
				readDone <- nil
				return
			}
			if err != nil {
				readDone <- fmt.Errorf("reply %d: %w", i, err)
				return
			}
			if i >= limit {
				readDone <- fmt.Errorf("%w: reply %d, to a request never sent", errCorrupt, i)
				return
			}
			_, want := pr.message(p, i, src)
			if !bytes.Equal(got, want) {
				readDone <- fmt.Errorf("%w: reply %d: %d bytes, want %d (first 40: %q, want %q)", errCorrupt, i,
					len(got), len(want), got[:min(40, len(got))], want[:min(40, len(want))])
				return
			}
			replies <- i + 1
		}
	}()
	src := byteStream(p.id)
	for i := range p.sizes {
		req, _ := pr.message(p, i, src)
		if i == p.abortAt {
			if i > 0 {
				select {
				case <-replies:
				case err := <-readDone:
					return fmt.Errorf("%s session %#x: before disconnecting: %v", pr.name, p.id, err)
				}
			}
			if _, err := c.Write(req[:len(req)/2]); err != nil {
				return fmt.Errorf("%s session %#x: write before the disconnect: %w", pr.name, p.id, err)
			}
			if p.linger0 {
				c.SetLinger(0)
			}
			c.Close()
			if err := <-readDone; errors.Is(err, errCorrupt) {
				return fmt.Errorf("%s session %#x (disconnecting): %w", pr.name, p.id, err)
			}
			return nil
		}
		if _, err := c.Write(req); err != nil {
			return fmt.Errorf("%s session %#x: write request %d (%d bytes): %w", pr.name, p.id, i, len(req), err)
		}
		if p.pauses[i] > 0 {
			time.Sleep(p.pauses[i])
		}
	}
	if hostile {
		if _, err := c.Write(pr.oversized); err != nil {
			return fmt.Errorf("%s session %#x: write the oversized request: %w", pr.name, p.id, err)
		}
	}
	if err := c.CloseWrite(); err != nil {
		return fmt.Errorf("%s session %#x: CloseWrite: %w", pr.name, p.id, err)
	}
	if err := <-readDone; err != nil {
		return fmt.Errorf("%s session %#x (hostile %v): %w", pr.name, p.id, hostile, err)
	}
	return nil
}

// checkCodecReports matches the server's reports with the sessions.
// It returns how the disconnecting sessions ended on the server's side.
func checkCodecReports(t *testing.T, pr codecProto, reps []connReport, sessions map[uint64]sessionPlan, hostile map[uint64]bool) map[string]int {
	t.Helper()
	ends := map[string]int{}
	got := byID(t, reps)
	if len(got) != len(sessions) {
		t.Errorf("the server reported %d sessions; the clients ran %d", len(got), len(sessions))
	}
	for id, p := range sessions {
		r, ok := got[id]
		switch {
		case !ok:
			t.Errorf("session %#x: no server report (connection lost)", id)
		case hostile[id]:
			if !errors.Is(r.err, stream.ErrTooLong) || r.frames != len(p.sizes) {
				t.Errorf("session %#x (oversized request last): server answered %d of %d, err %v; want all and stream.ErrTooLong",
					id, r.frames, len(p.sizes), r.err)
			}
		case p.abortAt < 0:
			if r.err != nil || r.frames != len(p.sizes) {
				t.Errorf("session %#x (clean): server answered %d of %d requests, err %v", id, r.frames, len(p.sizes), r.err)
			}
		default:
			ends[endKind(r.err)]++
			if r.frames > p.abortAt {
				t.Errorf("session %#x: server answered %d requests; the client sent %d whole", id, r.frames, p.abortAt)
			}
			switch {
			case r.err == nil, isPeerGone(r.err), errors.Is(r.err, io.ErrUnexpectedEOF):
			case errors.Is(r.err, errMalformed) && r.frames == p.abortAt:
				// The half request, read as a last line without a newline: it must be
				// exactly the half the client sent.
				src := byteStream(id)
				var req []byte
				for i := 0; i <= p.abortAt; i++ {
					req, _ = pr.message(p, i, src)
				}
				if !bytes.Equal(r.last, req[:len(req)/2]) {
					t.Errorf("session %#x: the server's last request (%d bytes) is not the half sent (%d bytes): %v",
						id, len(r.last), len(req)/2, r.err)
				}
			default:
				t.Errorf("session %#x (disconnected, linger0 %v): server error %v", id, p.linger0, r.err)
			}
		}
	}
	return ends
}

// endKind names how a connection ended, for the logs.
func endKind(err error) string {
	switch {
	case err == nil:
		return "clean"
	case errors.Is(err, syscall.ECONNRESET):
		return "ECONNRESET"
	case errors.Is(err, syscall.EPIPE):
		return "EPIPE"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected EOF"
	case errors.Is(err, errMalformed):
		return "truncated request"
	case errors.Is(err, stream.ErrTooLong):
		return "too long"
	}
	return "other"
}

// TestNetLoadStreamCodecs runs the framed and the line servers on each backend under
// many pipelining Go clients. Proves: FrameReader/FrameWriter and BufReader/BufWriter
// over blitzio TCP deliver every request intact and in order (the server verifies each
// one's checksum and sequence number) and every reply intact (the client compares it
// byte for byte); a flush policy that batches pipelined replies loses none; a request
// over the limit ends its connection with stream.ErrTooLong after every earlier reply;
// a client that disconnects mid-request costs the server an error on that connection
// only; every connection is reported once; nothing leaks.
func TestNetLoadStreamCodecs(t *testing.T) {
	for _, pr := range codecProtos {
		t.Run(pr.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, cfg blitzio.Config) {
				leakCheck(t)
				r := seeded(t)
				rt := newNetRuntime(t, cfg)
				srv := startTCPServer(t, rt, pr.handler)
				clients, sessions := scaled(48, 2), scaled(6, 2)
				hostile := map[uint64]bool{}
				plans, all := planClients(r, clients, sessions, func(id uint64) sessionPlan {
					p := planSession(r, id, 16, 8<<10, 10)
					if p.abortAt == 0 {
						// A disconnect waits for a reply first (so the server knows the
						// session): never in the first request.
						p.abortAt = len(p.sizes) - 1
						if p.abortAt == 0 {
							p.abortAt = -1
						}
					}
					if p.abortAt < 0 && r.IntN(20) == 0 {
						hostile[id] = true
					}
					return p
				})
				var errs []error
				watchdog(t, pr.name+" load", netPhaseLimit, func() {
					errs = runClients(plans, func(p sessionPlan) error {
						return runCodecSession(srv.addr(), pr, p, hostile[p.id])
					})
				})
				reportErrors(t, pr.name+" client", errs)
				srv.quiesce(t, len(all))
				ends := checkCodecReports(t, pr, srv.stop(t), all, hostile)
				t.Logf("%d clients, %d sessions, %d with an oversized request; disconnects seen by the server as %v",
					clients, len(all), len(hostile), ends)
			})
		})
	}
}
