//go:build linux || darwin || freebsd

// Command resp is a small Redis-protocol server on blitzio that redis-cli can talk to:
// PING, ECHO, SET, GET, DEL, INCR, EXPIRE (on the runtime's timer wheel) and TTL. Each
// connection is a task written as a sequential function (blitzio.Async) over a buffered
// reader and writer from package stream; pipelined commands are answered with one write.
// It stops cleanly on SIGINT or SIGTERM.
//
//	go run ./examples/resp -addr 127.0.0.1:6380
//	redis-cli -p 6380 set greeting hello
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/stream"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6380", "address to listen on (port 0 picks a free one)")
	flag.Parse()
	if err := run(*addr); err != nil {
		log.Fatal(err)
	}
}

// store is the key space. Its lock is a plain sync.Mutex: it is never held across an
// await, only for a map access, which is what Tokio's docs advise too.
type store struct {
	mu   sync.Mutex
	data map[string]entry
}

type entry struct {
	val string
	// gen tells an EXPIRE's timer whether the key was replaced since it was armed.
	gen     uint64
	expires time.Time // zero: no expiry
}

var gens uint64

func (s *store) get(key string, now time.Time) (entry, bool) {
	e, ok := s.data[key]
	if ok && !e.expires.IsZero() && !now.Before(e.expires) {
		delete(s.data, key)
		return entry{}, false
	}
	return e, ok
}

func run(addr string) error {
	rt, err := blitzio.New(blitzio.Config{})
	if err != nil {
		return err
	}
	stop := blitzio.NewShutdown()
	if err := stop.TriggerOn(blitzio.SignalInterrupt, blitzio.SignalTerminate); err != nil {
		return err
	}
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return err
	}
	l, err := blitzio.ListenTCP("tcp", ta)
	if err != nil {
		return err
	}
	fmt.Printf("resp: listening on %s\n", l.Addr())
	db := &store{data: map[string]entry{}}
	blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) error {
		defer l.Close()
		for {
			sel := blitzio.Await(co, blitzio.Select2(l.Accept(), stop.Done()))
			if sel.Index == 1 {
				return nil
			}
			if sel.V1.Err != nil {
				return sel.V1.Err
			}
			blitzio.Spawn(co, serve(rt, db, sel.V1.Value.Conn))
		}
	}))
	<-stop.Context().Done()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stop.OnShutdown(rt.Shutdown) // closes the connections still open
	if err := stop.Wait(ctx); err != nil {
		return err
	}
	fmt.Println("resp: stopped")
	return nil
}

// errProtocol is a malformed request: the server answers with an error and closes.
var errProtocol = errors.New("protocol error")

// serve answers one connection's commands until it closes.
func serve(rt *blitzio.Runtime, db *store, conn *blitzio.TCPStream) blitzio.Future[struct{}] {
	return blitzio.Async(func(co *blitzio.Co) struct{} {
		defer conn.Close()
		in := stream.NewBufReader(conn, 0)
		out := stream.NewBufWriter(conn, 0)
		for {
			args, err := readCommand(co, in)
			if err != nil {
				if !errors.Is(err, io.EOF) {
					blitzio.Await(co, out.Write([]byte("-ERR "+err.Error()+"\r\n")))
					blitzio.Await(co, out.Flush())
				}
				return struct{}{}
			}
			reply := execute(co, rt, db, args)
			if r := blitzio.Await(co, out.Write([]byte(reply))); r.Err != nil {
				return struct{}{}
			}
			// Pipelining: answer everything already received with one write.
			if in.Buffered() == 0 {
				if r := blitzio.Await(co, out.Flush()); r.Err != nil {
					return struct{}{}
				}
			}
		}
	})
}

// readCommand reads one request: a RESP array of bulk strings (what redis-cli sends) or
// an inline command (a line of words, what telnet sends).
func readCommand(co *blitzio.Co, in *stream.BufReader) ([]string, error) {
	line := blitzio.Await(co, in.ReadLine())
	if line.Err != nil {
		return nil, line.Err
	}
	if !strings.HasPrefix(line.Value, "*") {
		if f := strings.Fields(line.Value); len(f) > 0 {
			return f, nil
		}
		return readCommand(co, in)
	}
	n, err := strconv.Atoi(line.Value[1:])
	if err != nil || n < 1 || n > 1024 {
		return nil, errProtocol
	}
	args := make([]string, n)
	for i := range args {
		hdr := blitzio.Await(co, in.ReadLine())
		if hdr.Err != nil {
			return nil, hdr.Err
		}
		size, err := strconv.Atoi(strings.TrimPrefix(hdr.Value, "$"))
		if !strings.HasPrefix(hdr.Value, "$") || err != nil || size < 0 || size > 1<<20 {
			return nil, errProtocol
		}
		buf := make([]byte, size+2) // the bytes and their CRLF
		if r := blitzio.Await(co, stream.ReadFull(in, buf)); r.Err != nil {
			return nil, r.Err
		}
		if string(buf[size:]) != "\r\n" {
			return nil, errProtocol
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}

func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// execute runs one command and returns its RESP reply.
func execute(co *blitzio.Co, rt *blitzio.Runtime, db *store, args []string) string {
	cmd := strings.ToUpper(args[0])
	wrongArgs := "-ERR wrong number of arguments for '" + strings.ToLower(cmd) + "' command\r\n"
	now := rt.Now()
	db.mu.Lock()
	defer db.mu.Unlock()
	switch cmd {
	case "PING":
		if len(args) == 2 {
			return bulk(args[1])
		}
		return "+PONG\r\n"
	case "ECHO":
		if len(args) != 2 {
			return wrongArgs
		}
		return bulk(args[1])
	case "SET":
		if len(args) != 3 {
			return wrongArgs
		}
		gens++
		db.data[args[1]] = entry{val: args[2], gen: gens}
		return "+OK\r\n"
	case "GET":
		if len(args) != 2 {
			return wrongArgs
		}
		if e, ok := db.get(args[1], now); ok {
			return bulk(e.val)
		}
		return "$-1\r\n"
	case "DEL":
		if len(args) < 2 {
			return wrongArgs
		}
		n := 0
		for _, k := range args[1:] {
			if _, ok := db.get(k, now); ok {
				delete(db.data, k)
				n++
			}
		}
		return ":" + strconv.Itoa(n) + "\r\n"
	case "INCR":
		if len(args) != 2 {
			return wrongArgs
		}
		e, _ := db.get(args[1], now)
		v := int64(0)
		if e.val != "" {
			var err error
			if v, err = strconv.ParseInt(e.val, 10, 64); err != nil {
				return "-ERR value is not an integer or out of range\r\n"
			}
		}
		v++
		e.val = strconv.FormatInt(v, 10)
		if e.gen == 0 {
			gens++
			e.gen = gens
		}
		db.data[args[1]] = e
		return ":" + e.val + "\r\n"
	case "EXPIRE":
		if len(args) != 3 {
			return wrongArgs
		}
		secs, err := strconv.ParseInt(args[2], 10, 64)
		if err != nil || secs > 1<<31 {
			return "-ERR value is not an integer or out of range\r\n"
		}
		e, ok := db.get(args[1], now)
		if !ok {
			return ":0\r\n"
		}
		d := time.Duration(secs) * time.Second
		e.expires = now.Add(d)
		db.data[args[1]] = e
		// A timer on the runtime's wheel removes the key when it expires (GET also
		// checks, so a key is never seen late); the generation keeps it from removing
		// a key set again meanwhile.
		key, gen := args[1], e.gen
		blitzio.Spawn(co, blitzio.Map(blitzio.Sleep(d), func(struct{}) struct{} {
			db.mu.Lock()
			if cur, ok := db.data[key]; ok && cur.gen == gen && !cur.expires.IsZero() && !rt.Now().Before(cur.expires) {
				delete(db.data, key)
			}
			db.mu.Unlock()
			return struct{}{}
		}))
		return ":1\r\n"
	case "TTL":
		if len(args) != 2 {
			return wrongArgs
		}
		e, ok := db.get(args[1], now)
		switch {
		case !ok:
			return ":-2\r\n"
		case e.expires.IsZero():
			return ":-1\r\n"
		}
		return ":" + strconv.Itoa(int(e.expires.Sub(now).Round(time.Second)/time.Second)) + "\r\n"
	case "COMMAND": // redis-cli asks for the command table at start; an empty one will do
		return "*0\r\n"
	}
	return "-ERR unknown command '" + args[0] + "'\r\n"
}
