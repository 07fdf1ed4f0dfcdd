package blitzio

// Temporary reports true, so that the error of an expired Timeout satisfies net.Error
// (its Timeout method reports true) as a Go networking user expects.
func (timeoutError) Temporary() bool { return true }
