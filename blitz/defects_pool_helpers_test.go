package blitz

// White-box accessors for the defects_pool tests.

// guestCounts returns how many guest Tasks p retains (busy or free) and how many an
// idle worker scans when it looks for work (the pinned guests, busy or free, and the
// busy overflow guests).
func guestCounts(p *Pool) (retained, scanned int) {
	p.guestMu.Lock()
	defer p.guestMu.Unlock()
	n := int(p.nGuests.Load()) + int(p.nPinned.Load())
	return len(p.free) + n, n
}

// pinnedLimit is the most pinned guests p makes: the most an idle worker scans.
func pinnedLimit(p *Pool) int { return len(p.pinned) }

// taskSlabs returns the length of t's slab table.
func taskSlabs(t *Task) int { return len(t.slabs) }

// poolClosing reports whether Close has started on p.
func poolClosing(p *Pool) bool { return p.ops.Load()&closedBit != 0 }

// guestKeepLimit is the most guest Tasks p keeps while no Call is in flight: the
// pinned ones and the free overflow ones.
func guestKeepLimit(p *Pool) int { return len(p.pinned) + p.guestKeep }
