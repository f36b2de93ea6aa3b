package main

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// An interrupted run (^C, or a test's timeout sending SIGTERM) stops what it started
// before it exits: the replicas, the workload's processes and its own PostgreSQL. Without
// this, the deferred teardown never runs and a daemonised PostgreSQL and the replicas
// outlive the run on a shared machine.
var interrupt struct {
	mu  sync.Mutex
	fns []func()
}

// onInterrupt registers fn to run, newest first, if the run is interrupted. Each fn must
// be safe to run while the run is still using what it stops.
func onInterrupt(fn func()) {
	interrupt.mu.Lock()
	defer interrupt.mu.Unlock()
	interrupt.fns = append(interrupt.fns, fn)
}

func stopOnInterrupt() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "chaos run: %s: stopping what this run started\n", s)
		interrupt.mu.Lock()
		fns := append([]func(){}, interrupt.fns...)
		interrupt.mu.Unlock()
		for i := len(fns) - 1; i >= 0; i-- {
			fns[i]()
		}
		os.Exit(130)
	}()
}
