package server

import (
	"errors"
	"sync"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/task"
)

var (
	errQueueFull = errors.New("queue is full")
	errDraining  = errors.New("server is draining")
)

// job is one inference request waiting for, or being run by, the worker.
type job struct {
	id       string
	seq      int64
	payload  []byte
	enqueued time.Time

	// Set by the worker before done is closed.
	queueMs float64
	res     task.Result
	err     error
	done    chan struct{}
}

// queue is the bounded queue in front of the one worker: up to size jobs wait
// while one runs. After drain, submissions fail and idle is closed once every
// accepted job has finished.
type queue struct {
	jobs chan *job

	mu       sync.Mutex
	closed   bool
	inFlight int // accepted and not finished
	idleCh   chan struct{}
}

func newQueue(size int) *queue {
	return &queue{jobs: make(chan *job, size), idleCh: make(chan struct{})}
}

func (q *queue) submit(j *job) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return errDraining
	}
	j.enqueued = time.Now()
	select {
	case q.jobs <- j:
		q.inFlight++
		return nil
	default:
		return errQueueFull
	}
}

func (q *queue) finish() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.inFlight--
	if q.closed && q.inFlight == 0 {
		close(q.idleCh)
	}
}

// drain stops accepting jobs and returns how many are still in flight.
func (q *queue) drain() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return q.inFlight
	}
	q.closed = true
	close(q.jobs) // the worker finishes what is buffered, then stops
	if q.inFlight == 0 {
		close(q.idleCh)
	}
	return q.inFlight
}

func (q *queue) idle() <-chan struct{} { return q.idleCh }

func (q *queue) depth() int { return len(q.jobs) }

func (q *queue) pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.inFlight
}
