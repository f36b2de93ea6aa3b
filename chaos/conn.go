package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/statewright/statewright/clients/go/statewright/v1"
)

// replicaConn is one connection to one replica, with its services on it.
type replicaConn struct {
	target string
	conn   *grpc.ClientConn
	wf     pb.WorkflowServiceClient
	tasks  pb.TaskServiceClient
	sched  pb.ScheduleServiceClient
	batch  pb.BatchServiceClient
}

// dialAll connects to every target. Reconnects are quick and capped at a second: a
// replica that restarts is used again within a second or so, as a client with a short
// backoff would.
func dialAll(targets []string) ([]*replicaConn, error) {
	var out []*replicaConn
	for _, t := range targets {
		if !strings.HasPrefix(t, "127.0.0.1:") {
			return nil, fmt.Errorf("target %q is not on 127.0.0.1", t)
		}
		conn, err := grpc.NewClient(t,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithConnectParams(grpc.ConnectParams{
				Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
				MinConnectTimeout: time.Second,
			}),
		)
		if err != nil {
			return nil, err
		}
		out = append(out, &replicaConn{t, conn, pb.NewWorkflowServiceClient(conn), pb.NewTaskServiceClient(conn),
			pb.NewScheduleServiceClient(conn), pb.NewBatchServiceClient(conn)})
	}
	return out, nil
}

func closeAll(conns []*replicaConn) {
	for _, c := range conns {
		c.conn.Close()
	}
}

// router picks replicas at random, avoiding for a moment one whose last call failed in
// transport (killed, paused), as a client with health checks would.
type router struct {
	mu      sync.Mutex
	conns   []*replicaConn
	suspect map[string]time.Time
	rng     *rand.Rand
}

func newRouter(conns []*replicaConn, seed uint64) *router {
	return &router{conns: conns, suspect: map[string]time.Time{}, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

func (r *router) pick() *replicaConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	var healthy []*replicaConn
	for _, c := range r.conns {
		if until, ok := r.suspect[c.target]; !ok || now.After(until) {
			healthy = append(healthy, c)
		}
	}
	if len(healthy) == 0 {
		healthy = r.conns
	}
	return healthy[r.rng.IntN(len(healthy))]
}

// byTarget is the replica at target (any, if none is).
func (r *router) byTarget(target string) *replicaConn {
	for _, c := range r.conns {
		if c.target == target {
			return c
		}
	}
	return r.pick()
}

// other is a replica other than c (c itself when there is only one).
func (r *router) other(c *replicaConn) *replicaConn {
	for i, x := range r.conns {
		if x == c {
			return r.conns[(i+1)%len(r.conns)]
		}
	}
	return c
}

func (r *router) failed(c *replicaConn, op *Op) {
	if op.Outcome == outcomeUnknown && op.Reason == "" {
		r.mu.Lock()
		r.suspect[c.target] = time.Now().Add(time.Second)
		r.mu.Unlock()
	}
}

// limiter spaces calls to at most rate per second (shared by a process's lanes).
type limiter struct {
	mu   sync.Mutex
	next time.Time
	gap  time.Duration
}

func newLimiter(rate float64) *limiter {
	if rate <= 0 {
		return &limiter{}
	}
	return &limiter{gap: time.Duration(float64(time.Second) / rate)}
}

func (l *limiter) wait() {
	if l.gap == 0 {
		return
	}
	l.mu.Lock()
	now := time.Now()
	if l.next.Before(now) {
		l.next = now
	}
	at := l.next
	l.next = l.next.Add(l.gap)
	l.mu.Unlock()
	time.Sleep(time.Until(at))
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
