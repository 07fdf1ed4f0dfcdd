// Package stress holds cross-module stress, soak and fault suites for blitz, blitzio and
// shared/lockfree. The suites are tests; this package has no API.
//
// Run the short profile (what CI runs, with and without -race, in well under two
// minutes) with
//
//	go test ./testing/stress
//
// and the soak for a given time, writing its sampled series (heap in use, goroutines,
// open file descriptors, p50/p99 latency, throughput) as soak.csv and soak.svg, with
//
//	go test ./testing/stress -run Soak -soak 30m -soak.dir DIR -timeout 35m
//
// (go test's default -timeout of 10 minutes is too short for it; the test says so).
//
// Every test draws its random choices from the run's seed, which a failing test prints
// with the command that replays it: STRESS_SEED=N (or -stress.seed N). A replay repeats
// the load and the fault plan; goroutine interleavings stay the scheduler's.
//
// What the suites check:
//
//   - TestCross: blitz parallel loops called at once from blitzio tasks (through a
//     Completion, and inside a poll), from the blocking pool and from plain goroutines;
//     runtimes created and closed while pools run; nested pools; panics and
//     runtime.Goexit injected at random points, seen by their caller only; handles and
//     stream pairs shared by two runtimes, one of which closes under the other's awaits.
//   - TestShutdownUnderLoad: runtime Close or Shutdown(ctx) and pool Close at random
//     moments while CPU work, timers, child processes, files and in-memory stream pairs
//     are in flight; afterwards every handle is resolved, every unit answered exactly
//     once or cancelled, and no child process, goroutine or file descriptor is left.
//   - TestFDExhaustion: RLIMIT_NOFILE lowered to a few spare descriptors under file,
//     process and stream load; units that find none fail with EMFILE on their own
//     handle, and the runtime serves new work once the limit is back.
//   - TestNetLoadTCPEcho, TestNetLoadTCPEchoBlitzioClients, TestNetLoadStreamCodecs:
//     TCP servers of blitzio tasks (plain echo, and the stream package's frame and line
//     codecs) under many Go or blitzio clients with random sizes, pauses, pipelining
//     and disconnects, on the epoll and io_uring backends; every byte checked.
//   - TestHTTPLoad: net/http over the net.Listener adapter, and blitzio's httpserve,
//     under keep-alive, one-shot, cancelling, resetting and slow clients; every
//     response checked, every completed request handled exactly once.
//   - Network faults (faults_net_test.go): io_uring refused (the runtime falls back to
//     epoll and serves), slow readers (server memory bounded, other connections
//     served), peer resets mid-read and mid-write, half-close both ways, silent clients
//     under header timeouts and shutdowns, handler tasks aborted at random.
//   - TestSoak: mixed load for the given time; fails on a lost or wrong response, or on
//     heap or goroutines that keep growing over the second half of the run.
//
// Every wait is bounded by a watchdog that fails with every goroutine's stack, and
// every scenario ends with a check that the goroutines and /proc/self/fd are back to
// where they were.
package stress
