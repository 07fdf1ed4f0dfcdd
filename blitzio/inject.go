package blitzio

import (
	"sync"
	"sync/atomic"
)

// injectQueue is the global injection queue (a mutex and an intrusive linked
// list): tasks spawned or woken from outside the workers, and overflow from full local
// queues. Workers pull from it in batches of up to maxGlobalBatch. n lets workers check
// for work without taking the lock.
type injectQueue struct {
	n          atomic.Int64
	mu         sync.Mutex
	head, tail *header
}

// maxGlobalBatch caps how many tasks a worker moves from the injection queue to its local
// queue at once (Tokio's MAX_GLOBAL_QUEUE_BATCH_SIZE).
const maxGlobalBatch = 64

func (q *injectQueue) isEmpty() bool { return q.n.Load() == 0 }

func (q *injectQueue) push(h *header) {
	h.next = nil
	q.pushBatch(h, h, 1)
}

func (q *injectQueue) pushBatch(first, last *header, n int) {
	q.mu.Lock()
	if q.tail == nil {
		q.head = first
	} else {
		q.tail.next = first
	}
	q.tail = last
	// Increment under the lock, before a popper could see the tasks, so n never goes
	// negative; the atomic add is also the store a parking worker's check pairs with.
	q.n.Add(int64(n))
	q.mu.Unlock()
}

// popBatch takes up to max tasks and returns them as a list.
func (q *injectQueue) popBatch(max int) (first *header, n int) {
	if q.isEmpty() {
		return nil, 0
	}
	q.mu.Lock()
	first = q.head
	last := (*header)(nil)
	for q.head != nil && n < max {
		last = q.head
		q.head = q.head.next
		n++
	}
	if last != nil {
		last.next = nil
	}
	if q.head == nil {
		q.tail = nil
	}
	q.n.Add(-int64(n))
	q.mu.Unlock()
	return first, n
}

func (q *injectQueue) pop() *header {
	h, _ := q.popBatch(1)
	return h
}
