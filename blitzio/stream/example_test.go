package stream_test

import (
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
