package blitz

// White-box accessors for the defects_pool tests.

// guestCounts returns how many guest Tasks p retains (busy or free) and how many an
// idle worker scans when it looks for work.
func guestCounts(p *Pool) (retained, scanned int) {
	p.guestMu.Lock()
	defer p.guestMu.Unlock()
	n := int(p.nGuests.Load())
	return len(p.free) + n, n
}

// taskSlabs returns the length of t's slab table.
func taskSlabs(t *Task) int { return len(t.slabs) }

// poolClosing reports whether Close has started on p.
func poolClosing(p *Pool) bool { return p.ops.Load()&closedBit != 0 }

// guestKeepLimit is the most free guest Tasks p keeps for reuse.
func guestKeepLimit(p *Pool) int { return p.guestKeep }
