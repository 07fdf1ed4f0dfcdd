package stream_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/stream"
)

// A line-based request/response protocol handler: a tiny key-value store that answers
// SET, GET and QUIT, one line per request. handle works on any stream (a TCP
// connection, or the in-memory Duplex the example uses in place of a client socket).
func Example_lineProtocol() {
	handle := func(conn blitzio.AsyncReadWriter) blitzio.Future[error] {
		return blitzio.Async(func(co *blitzio.Co) error {
			in := stream.NewBufReader(conn, 0)
			out := stream.NewFrameWriter[string](conn, stream.LinesCodec{})
			store := map[string]string{}
			for {
				line := blitzio.Await(co, in.ReadLine())
				if line.Err == io.EOF {
					return nil
				} else if line.Err != nil {
					return line.Err
				}
				var reply string
				switch cmd, arg, _ := strings.Cut(line.Value, " "); cmd {
				case "SET":
					k, v, _ := strings.Cut(arg, " ")
					store[k], reply = v, "OK"
				case "GET":
					v, ok := store[arg]
					reply = map[bool]string{true: "VALUE " + v, false: "NOT_FOUND"}[ok]
				case "QUIT":
					return blitzio.Await(co, out.Send("BYE")).Err
				default:
					reply = "ERROR unknown command " + cmd
				}
				if r := blitzio.Await(co, out.Send(reply)); r.Err != nil {
					return r.Err
				}
			}
		})
	}

	rt, _ := blitzio.New(blitzio.Config{Workers: 2})
	defer rt.Close()
	client, server := stream.Duplex(1024)
	blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) error {
		defer server.Close() // the client reads EOF after the last reply
		return blitzio.Await(co, handle(server))
	}))
	replies, _ := blitzio.BlockOn(rt, blitzio.Async(func(co *blitzio.Co) []string {
		blitzio.Await(co, stream.WriteAll(client, []byte("SET lang go\nGET lang\nGET rust\nPING\nQUIT\n")))
		lines := stream.NewFrameReader[string](client, stream.LinesCodec{})
		var got []string
		for {
			r := blitzio.Await(co, lines.Next())
			if r.Err != nil {
				return got
			}
			got = append(got, r.Value)
		}
	}))
	fmt.Println(strings.Join(replies, "\n"))
	// Output:
	// OK
	// VALUE go
	// NOT_FOUND
	// ERROR unknown command PING
	// BYE
}

// The default LengthDelimitedCodec: a 4-byte big-endian length before each payload.
func ExampleLengthDelimitedCodec() {
	codec := stream.LengthDelimitedCodec{}
	wire, _ := codec.Encode(nil, []byte("hello"))
	wire, _ = codec.Encode(wire, []byte("world!"))
	fmt.Printf("% x\n", wire[:9])
	for len(wire) > 0 {
		frame, n, err := codec.Decode(wire, true)
		if err != nil || n == 0 {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("%q\n", frame)
		wire = wire[n:]
	}
	// Output:
	// 00 00 00 05 68 65 6c 6c 6f
	// "hello"
	// "world!"
}

// A header of a version byte, a 2-byte length of the rest and a type byte, decoded so
// that each frame keeps its type byte (tokio-util's length_field_offset,
// length_adjustment and num_skip): the version and the length are dropped.
func ExampleLengthDelimitedCodec_headerFields() {
	codec := stream.LengthDelimitedCodec{
		LengthFieldOffset: 1, // the version byte
		LengthFieldLength: 2,
		LengthAdjustment:  1, // the type byte follows the length and is not counted
		NumSkip:           3, // drop the version and the length
	}
	wire := []byte("\x01\x00\x05Thello\x01\x00\x02Pok")
	for len(wire) > 0 {
		frame, n, err := codec.Decode(wire, true)
		if err != nil || n == 0 {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("type %c: %q\n", frame[0], frame[1:])
		wire = wire[n:]
	}
	// Output:
	// type T: "hello"
	// type P: "ok"
}

// Frames that carry their own header: a 2-byte little-endian length that counts the
// whole frame, header included. With NumSkip negative nothing is skipped, and Encode
// fills in the length field of a frame whose header the caller wrote.
func ExampleLengthDelimitedCodec_headerIncluded() {
	codec := stream.LengthDelimitedCodec{LengthFieldLength: 2, LittleEndian: true, NumSkip: -1}
	msg := append([]byte{0, 0}, "ping"...) // room for the length
	wire, err := codec.Encode(nil, msg)
	fmt.Printf("% x %v\n", wire, err)
	frame, n, err := codec.Decode(wire, true)
	fmt.Printf("%q %d %v\n", frame, n, err)
	// Output:
	// 06 00 70 69 6e 67 <nil>
	// "\x06\x00ping" 6 <nil>
}

// Frames over MaxFrameLength fail with ErrTooLong before their payload is read, and a
// configuration the codec cannot use is reported by Validate (and by Decode and
// Encode).
func ExampleLengthDelimitedCodec_Validate() {
	small := stream.LengthDelimitedCodec{LengthFieldLength: 1, MaxFrameLength: 3}
	_, _, err := small.Decode([]byte{200}, false)
	fmt.Println(errors.Is(err, stream.ErrTooLong))
	fmt.Println(stream.LengthDelimitedCodec{LengthFieldLength: 16}.Validate())
	// Output:
	// true
	// stream: invalid LengthDelimitedCodec: LengthFieldLength is 16, want 1 to 8 (or 0 for 4)
}

// A FrameReader and a FrameWriter sharing one configured codec over a stream.
func ExampleLengthDelimitedCodec_frames() {
	codec := stream.LengthDelimitedCodec{LengthFieldLength: 2, MaxFrameLength: 1024}
	rt, _ := blitzio.New(blitzio.Config{Workers: 1})
	defer rt.Close()
	client, server := stream.Duplex(64)
	got, _ := blitzio.BlockOn(rt, blitzio.Async(func(co *blitzio.Co) []string {
		out := stream.NewFrameWriter[[]byte](client, codec)
		for _, m := range []string{"one", "", "three"} {
			if err := out.Feed([]byte(m)); err != nil {
				return nil
			}
		}
		blitzio.Await(co, out.Flush())
		client.CloseWrite()
		in := stream.NewFrameReader[[]byte](server, codec)
		var got []string
		for {
			r := blitzio.Await(co, in.Next())
			if r.Err != nil {
				return append(got, r.Err.Error())
			}
			got = append(got, fmt.Sprintf("%q", r.Value))
		}
	}))
	fmt.Println(strings.Join(got, " "))
	// Output:
	// "one" "" "three" EOF
}

// A protocol that starts with a line-based handshake and then switches to raw bytes
// (like an HTTP Upgrade or SMTP's DATA): the FrameReader may have read past the last
// line, and Buffered hands those bytes over before the stream is read directly.
func ExampleFrameReader_Buffered() {
	rt, _ := blitzio.New(blitzio.Config{Workers: 1})
	defer rt.Close()
	client, server := stream.Duplex(64)
	out, _ := blitzio.BlockOn(rt, blitzio.Async(func(co *blitzio.Co) string {
		blitzio.Await(co, stream.WriteAll(client, []byte("UPGRADE raw\nbinary payload")))
		client.CloseWrite()

		lines := stream.NewFrameReader[string](server, stream.LinesCodec{})
		hello := blitzio.Await(co, lines.Next())
		raw := append([]byte(nil), lines.Buffered()...) // read past the line
		buf := make([]byte, 64)
		for {
			r := blitzio.Await(co, stream.Read(server, buf))
			if r.Err != nil {
				break
			}
			raw = append(raw, buf[:r.Value]...)
		}
		return fmt.Sprintf("%s: %q", hello.Value, raw)
	}))
	fmt.Println(out)
	// Output:
	// UPGRADE raw: "binary payload"
}

// FrameWriter does not bound its buffer; Buffered tells a producer when to wait for
// the stream.
func ExampleFrameWriter_Buffered() {
	rt, _ := blitzio.New(blitzio.Config{Workers: 1})
	defer rt.Close()
	client, server := stream.Duplex(1 << 10)
	defer server.Close()
	report, _ := blitzio.BlockOn(rt, blitzio.Async(func(co *blitzio.Co) string {
		out := stream.NewFrameWriter[string](client, stream.LinesCodec{})
		flushes := 0
		for i := range 100 {
			if err := out.Feed(fmt.Sprint("event ", i)); err != nil {
				return err.Error()
			}
			if out.Buffered() >= 256 { // backpressure: write before encoding more
				if r := blitzio.Await(co, out.Flush()); r.Err != nil {
					return r.Err.Error()
				}
				flushes++
			}
		}
		blitzio.Await(co, out.Flush())
		return fmt.Sprintf("%d flushes on the way, %d bytes left", flushes, out.Buffered())
	}))
	fmt.Println(report)
	// Output:
	// 3 flushes on the way, 0 bytes left
}
