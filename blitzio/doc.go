// Package blitzio is an async I/O runtime in the spirit of Rust's Tokio: stackless,
// poll-based futures run by a work-stealing task scheduler.
package blitzio
