// Package httpserve serves any http.Handler over HTTP/1.1 on blitzio TCP and Unix
// connections, with the API of net/http's Server: Serve, ListenAndServe, Shutdown with
// http.Server.Shutdown's contract, Close, RegisterOnShutdown, the same timeouts and
// limits. Handlers are ordinary net/http handlers: http.ServeMux, middleware, JSON
// encoders, http.ResponseController all work. (The package is not called "http" so that
// a file importing it and net/http needs no alias.)
//
// # How a connection is served
//
// Each connection is one blitzio task, a hand-written state machine: it waits for the
// socket to be readable, reads into a 4 KB buffer taken from a pool, parses the request
// head with this package's own parser (one string allocation for all of the head's
// strings, no bufio, no textproto), and hands the request to a handler goroutine. While
// the connection is idle between keep-alive requests it holds no goroutine and no
// buffer: the buffer goes back to the pool before the task waits, and a waiting task
// is a few hundred bytes (TestIdleConnectionsHoldNoGoroutine checks the goroutines with
// 1,000 idle connections; blitzbench's http suite measures the bytes).
//
// A handler runs on a goroutine only while its request is in flight. The goroutines
// come from a pool of parked ones (a LIFO stack of at most 4*GOMAXPROCS; more run while
// handlers block, and exit when they finish; a parked one idle for 10 s exits too), so
// a request costs a channel send, not a goroutine start. The alternative, blitzio's
// blocking pool (SpawnBlocking), is slower for this: BenchmarkDispatch measures a round
// trip through each: 0.45 to 1.5 µs and no allocation through the pool against 2.5 to
// 7.6 µs and 5 allocations through SpawnBlocking (three runs on a shared, busy 2-core
// machine), so the server uses the pool. After the hand-off the connection task yields its P (runtime.Gosched),
// so the handler runs at once instead of after the worker parks in the I/O driver's
// system call.
//
// The handler's writes go to a buffer. When the handler returns, the goroutine looks for
// the next request already in the read buffer (pipelining) and serves it too, so the
// responses of a batch of pipelined requests leave in one write, in request order. Then
// it tries to read the next request itself with the task's waker: if bytes are there it
// goes on; if not, the task's waker stays registered with the I/O driver and the
// connection goes idle without waking the task. A response bigger than 32 KB, a Flush,
// or a 100 Continue is written from the goroutine at once; a goroutine waiting for a
// full socket, or for request body bytes, parks on a channel until the driver wakes it
// (no spinning, no thread held).
//
// While a handler runs, once it has read its request body to the end (or there is
// none), the connection's task watches the socket, as net/http's background read does:
// bytes that arrive are kept in the read buffer for the next request (until the buffer
// is full; the task then stops reading until it drains), and the end of the stream or a
// read error cancels the request's context with context.Canceled. So a handler waiting
// on r.Context().Done(), a long poll, is released when its client goes away. A client
// that only half-closes (shutdown of its writing side) after its request is seen the
// same way, as by net/http: the context is cancelled, and what the handler writes is
// still sent. Bytes of a next request do not cancel anything.
//
// Timeouts use the runtime's timer wheel from the connection task: IdleTimeout and
// ReadHeaderTimeout close the connection; ReadTimeout and WriteTimeout (and the
// deadlines set with http.ResponseController) make the handler's body reads and writes
// fail with os.ErrDeadlineExceeded, as they would on a net.Conn. A deadline may be set
// from any goroutine, and releases a read or write already waiting; those set with
// http.ResponseController last until the end of their request. Once a write to the
// socket has failed, every later one on the connection fails too (clearing the deadline
// does not bring it back), as with net/http's buffered writer: what the failed write
// held is lost, and what follows must not go out without it.
//
// # Behaviour shared with net/http
//
// Keep-alive and HTTP/1.0 keep-alive rules (an HTTP/1.0 request is answered in
// HTTP/1.0), "Connection: close", HEAD, Content-Length
// for a body that fits in 2 KB when the handler returns and chunked encoding otherwise
// (HTTP/1.0: the close ends the body), Date, Content-Type sniffing, informational 1xx
// responses, Expect: 100-continue (the 100 is sent when the handler first reads the
// body; a handler that answers without reading it gets the connection closed), request
// bodies with Content-Length or chunked, the unread rest of a body under 256 KB
// discarded by Request.Body.Close or after the handler (from 256 KB on, the connection
// closes; when it closes after the response anyway, the body is not read at all, so
// the response does not wait for it; a connection closed with a body unread is
// half-closed first and drained for a moment, so that a client still sending does not
// get a reset that destroys the response),
// http.Flusher, http.Hijacker (a stream.Conn and a bufio.ReadWriter holding the bytes
// already read; the connection stays the hijacker's even if the handler then panics
// or calls runtime.Goexit), a handler panic logged with its stack and the connection
// closed (http.ErrAbortHandler silently), runtime.Goexit in a handler closing the
// connection. Refused requests get
// net/http's answer: 400 for a malformed request line, header or Host, 431 for a head
// over MaxHeaderBytes, 505 for a protocol other than HTTP/1.x, 501 for a transfer
// coding other than chunked, 417 for an Expect other than 100-continue, 413 for a
// Content-Length over MaxBodyBytes; the connection is closed after.
//
// # Differences from net/http
//
//   - Obsolete line folding (a header line starting with a space or tab) is refused with
//     400; net/http joins such lines. RFC 9112 section 5.2 allows both.
//   - The request's context is cancelled when the handler returns, the client closes
//     the connection (see above), Server.Close closes it, or the context it derives
//     from (Server.BaseContext's or ConnContext's) is cancelled; it carries http.LocalAddrContextKey and the values of those contexts,
//     but not http.ServerContextKey (there is no *http.Server).
//   - Server.BaseContext gets the listener as a net.Listener whose Accept fails
//     (ErrAcceptByServer): the server accepts on it. Server.ConnState is called from
//     the runtime's worker for StateNew, StateActive and StateClosed.
//   - The head is built from the Header map as WriteHeader (or the first Write) saw
//     it, as net/http does, but the saved copy shares the value slices: a value changed
//     in place afterwards (h["X"][0] = v, not h.Set) may still reach the client.
//   - Every request trailer line must end in CRLF (net/http also accepts a bare LF
//     there), and a folded trailer line fails the body's read, as a folded header line
//     is refused. Request.Body.Close does not read a body whose client waits for 100
//     Continue (net/http's does), so its trailers stay unknown. Trailers otherwise work
//     as in net/http: Request.Trailer holds the declared names, then the values once
//     the body has been read to its end; a response sends the fields its Trailer field
//     declares, and those named with http.TrailerPrefix (even after a Flush), after a
//     chunked body.
//   - A handler's Transfer-Encoding other than chunked or identity is sent as set and
//     the close of the connection ends the body; net/http adds its own chunked coding
//     before the handler's, which leaves the handler's coding last, where RFC 9112
//     section 6.1 requires chunked.
//   - Body bytes a handler wrote before Hijack are sent before the connection is handed
//     over (net/http drops what its buffer still held); a HEAD response whose handler
//     wrote a body gets that body's length as Content-Length however long it was
//     (net/http only while the body fits its 2 KB buffer).
//   - A handler may read the request body while it writes the response, as if
//     http.ResponseController.EnableFullDuplex had been called (net/http's HTTP/1
//     server stops the body once the response starts, unless it has).
//   - The map ResponseWriter.Header returns is lent to the request: once the handler
//     has returned it is cleared and reused by later responses (Header then returns a
//     map of its own). The http.ResponseWriter contract already forbids using the writer
//     after ServeHTTP returns; with net/http, a map kept beyond that is merely ignored.
//   - net/http's background read stops at the first byte of a next request, so a
//     client that sends a pipelined request and then closes does not cancel the
//     request in flight there; this server reads on until its buffer is full, and
//     cancels it.
//   - A "close" in any value of the handler's Connection field closes the connection
//     after the response; net/http looks at the field's first value only, and may keep
//     a connection whose response said "close".
//   - TLS is not served: there is no ServeTLS or ListenAndServeTLS. For HTTPS,
//     terminate TLS in front of the server (a proxy or load balancer), or serve
//     net/http's http.Server on tls.NewListener over the stream package's
//     net.Listener adapter (a goroutine per connection then, as with net/http).
//   - HTTP/2 (h2c) is not served. As with net/http, the preface "PRI * HTTP/2.0"
//     reaches the handler (which may hijack the connection, as x/net/http2/h2c's
//     does), but with ContentLength 0 where net/http's has -1.
//   - Whether the connection of an HTTP/1.0 request persists follows Request.Close
//     (the tokens of every Connection line, split at commas): it does when keep-alive
//     is named and close is not, as RFC 9112 section 9.3 says. net/http's server looks
//     for keep-alive among the words of the first Connection line only (split at
//     spaces too) and, for a response of known length, keeps the connection even when
//     Request.Close is true ("keep-alive, close", "keep-alive x"), and closes it when
//     keep-alive is on a later Connection line.
//   - After a request body whose read failed (a broken chunked framing, the client's
//     end before the declared length), the response says "Connection: close" and the
//     connection closes; net/http may read a next request from where the body's read
//     stopped, bytes it could not frame. (A client that sends Expect: 100-continue and
//     then, without waiting, a next request instead of the body sees this: the bytes
//     after the head are the body, as RFC 9110 section 10.1.1 lets a client send it
//     without waiting, for both servers.)
//   - A body announced with Expect: 100-continue whose 100 was sent (the handler read
//     from it) and which the handler did not read to its end is drained as any other
//     body, and the connection kept; net/http closes the connection whenever such a
//     body was not read to its end. Once the 100 has gone the client must send the
//     whole body, so what follows it is the next request.
//   - A handler that answers a client waiting for 100 Continue without reading the
//     body gets "Connection: close" in its response, and the connection closes at
//     once (RFC 9112 section 9.6); net/http says close too, but then reads for the
//     body (its Request.Body.Close does) and holds the connection until the client
//     sends it or goes away.
//   - When Request.Body.Close gives up on a body (256 KB or more left), the response
//     says "Connection: close"; net/http closes the connection too, but with exactly
//     256 KB left its Close reads them all and its response does not say close, and to
//     an HTTP/1.0 keep-alive request it answers "Connection: keep-alive".
//   - A response head sent before the handler returns (a Flush, a body over the 2 KB
//     held back) is not preceded by a drain of the request body, as net/http's is (its
//     Flush waits for up to 256 KB of the body): the handler may still read the body.
//     The rest is drained after the handler; if 256 KB or more are left (declared by
//     Content-Length, or found while draining a chunked body), the connection then
//     closes after a response that did not say so (net/http says close, having found
//     the body too large before the head). A head sent while the client still waits for
//     100 Continue says close, as net/http's.
//   - The functions given to RegisterOnShutdown run once, when the first Shutdown or
//     Close begins; net/http runs them on every Shutdown call, and not on Close.
//   - A chunked body over MaxBodyBytes fails the handler's read with *http.MaxBytesError
//     (the handler chooses the status); a declared Content-Length over it is answered
//     413 without calling the handler.
//
// # Which I/O backend
//
// On Linux the default backend (BackendAuto) is io_uring, and it is the one to use for a
// socket server unless your own measurements say otherwise: a connection's readiness
// comes from a one-shot poll that the worker serving it arms when it has drained the
// socket, so the kernel posts the completion from that worker's busy thread (see
// blitzio's package doc). In blitzbench's http suite it served 2-17% more requests per
// second than the same server on blitzio.BackendEpoll in three of the four plaintext
// cases and 1% fewer in the fourth (1,000 connections, no pipelining), in a run of
// 2026-11-24 (see benchmarks/RESULTS.md).
//
// # With blitzio.Shutdown
//
// Set Server.Coordinator to a *blitzio.Shutdown: each request in flight holds one of
// its WorkGuards, from the end of its head until its response has been written to the
// socket (or the connection has failed), so Shutdown.InFlight counts the responses
// still queued too; the trigger (a signal) stops the server accepting and closes its idle
// connections at once, and the server's Shutdown runs as one of the coordinator's hooks,
// so that Shutdown.Wait returns when the requests in flight have been answered (or the
// deadline passed). This is what a Tokio user expects of a graceful stop and what a Go
// user gets from http.Server.Shutdown, in one place.
package httpserve
