// Package queue implements a bounded work queue with retries.
package queue

import (
	"context"
	"errors"
	"sync"
)

// MaxRetries is how often a job is retried before it is dropped.
const MaxRetries = 3

const (
	StateIdle State = iota
	StateRunning
)

var ErrClosed = errors.New("queue closed")

// State is the lifecycle of a queue.
type State int

// Job is one unit of work.
type Job interface {
	Run(ctx context.Context) error
	ID() string
}

// Queue runs jobs on a fixed number of workers.
type Queue[T Job] struct {
	mu      sync.Mutex
	pending []T
	state   State
}

type Handler func(Job) error

// New makes an idle queue.
func New[T Job](capacity int) *Queue[T] {
	return &Queue[T]{pending: make([]T, 0, capacity)}
}

// Push adds a job; it fails once the queue is closed.
func (q *Queue[T]) Push(job T) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.state == StateRunning && len(q.pending) == cap(q.pending) {
		return ErrClosed
	}
	q.pending = append(q.pending, job)
	return nil
}

func (q Queue[T]) Len() int { return len(q.pending) }

func (s State) String() string {
	switch s {
	case StateIdle:
		return "idle"
	default:
		return "running"
	}
}

func retry(ctx context.Context, job Job) (attempts int, err error) {
	for attempts = 1; attempts <= MaxRetries; attempts++ {
		if err = job.Run(ctx); err == nil {
			return attempts, nil
		}
	}
	return attempts, err
}
