// Package blitz is a work-stealing fork-join pool for CPU-parallel work, in the spirit of
// Rust's Rayon: Join, scopes, parallel loops and reductions, parallel iterators over
// slices and parallel sorts.
package blitz
