// Package netload is the measuring harness of the networking suites: load clients
// written for benchmarking (not net/http's client), the baseline servers they are
// compared against, and the idle-connection memory measurement.
//
// Every server, ours or a baseline, is a [Server]: a name and a Start function that
// listens on a loopback address and returns the address it bound and a stop function.
// The same client measures every server in the same run:
//
//   - [EchoClient]: N connections, each sending M-byte messages and reading the echo
//     back (closed loop), checking every byte; messages/s and bytes/s.
//   - [HTTPClient]: HTTP/1.1 over raw keep-alive sockets, P requests pipelined per
//     write, responses parsed (Content-Length and chunked bodies) and checked in order;
//     requests/s.
//   - [Connect]: connections opened, served (a one-byte echo) and closed per second.
//   - [UDPClient]: datagrams echoed per second, lost datagrams counted.
//   - [IdleConnMemory]: heap and stack growth of the server's process per idle
//     connection, with the connections held by a child process (see [RunHolderIfChild]).
//
// Every run is bounded in count and time and reports its errors: a server that stops
// answering fails the run with a timeout instead of hanging it. The clients refuse any
// address outside the loopback range (127.0.0.0/8, ::1, localhost) with
// [ErrNotLoopback], before sending anything.
//
// The Bench functions ([EchoBench], [HTTPBench], [AcceptBench], [UDPBench],
// [IdleMemoryBench]) turn a server and a load shape into a testing.B body, so the go
// test benchmarks and the blitzbench suites share one body per measurement.
package netload
