// Package tsync provides synchronisation primitives and channels for blitzio tasks: the
// counterpart of Tokio's tokio::sync. A task that waits on them returns pending and
// frees its worker instead of blocking it, so thousands of tasks can wait on one lock or
// channel on a handful of workers.
//
// The name (task sync) keeps it from clashing with the standard library's sync, which
// code using these primitives often imports too.
//
// Every primitive has three forms: a try-form that never waits, a future form for tasks
// (Poll it, Await it in an Async function, or combine it with Select and Timeout), and a
// blocking form for plain goroutines, so one value can join a task world and a goroutine
// world. Blocking forms must not be called from a task: they would block its worker.
//
// Waiting is cancellation-safe: dropping a waiting future (the loser of a Select, an
// expired Timeout, an aborted task) never loses a permit, a lock hand-off, a message or a
// notification; what was handed to the dropped waiter passes to the next one.
package tsync
