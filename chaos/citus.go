package main

import (
	"fmt"
	"strings"
)

// citusCluster is a private, throwaway Citus cluster: a coordinator and its workers, each
// a cluster of its own (PostgreSQL 15 with Citus loaded, built by scripts/install-citus).
// The replicas reach the coordinator only; the nemesis restarts the coordinator as it
// restarts a lone PostgreSQL, and restarts a worker (worker-restart).
type citusCluster struct {
	coordinator *cluster
	workers     []*cluster
}

// citusOptions are every node's: Citus loaded, and prepared transactions for the
// two-phase commits of writes that span nodes (DDL, reference tables).
const citusOptions = "-c shared_preload_libraries=citus -c max_prepared_transactions=300"

func newCitusCluster(workers int) (*citusCluster, error) {
	c := &citusCluster{}
	node, err := newClusterWith(citusOptions)
	if err != nil {
		return nil, err
	}
	c.coordinator = node
	for i := 0; i < workers; i++ {
		w, err := newClusterWith(citusOptions)
		if err != nil {
			c.stop()
			return nil, err
		}
		c.workers = append(c.workers, w)
	}
	return c, nil
}

func (c *citusCluster) url() string               { return c.coordinator.url() }
func (c *citusCluster) restart(mode string) error { return c.coordinator.restart(mode) }
func (c *citusCluster) restartWorker(i int, mode string) error {
	return c.workers[i].restart(mode)
}

func (c *citusCluster) stop() {
	for _, w := range c.workers {
		w.stop()
	}
	if c.coordinator != nil {
		c.coordinator.stop()
	}
}

// createDatabase makes the run's database on every node, with Citus in it and the
// workers added on the coordinator; statewrightd distributes the schema as it migrates.
func (c *citusCluster) createDatabase(name string) (string, error) {
	for _, node := range append([]*cluster{c.coordinator}, c.workers...) {
		if _, err := psql(node.url(), "CREATE DATABASE "+name); err != nil {
			return "", err
		}
		if _, err := psql(withDatabase(node.url(), name), "CREATE EXTENSION citus"); err != nil {
			return "", err
		}
	}
	url := withDatabase(c.coordinator.url(), name)
	stmts := []string{fmt.Sprintf("SELECT citus_set_coordinator_host('127.0.0.1', %d)", c.coordinator.port)}
	for _, w := range c.workers {
		stmts = append(stmts, fmt.Sprintf("SELECT citus_add_node('127.0.0.1', %d)", w.port))
	}
	if _, err := psql(url, strings.Join(stmts, "; ")); err != nil {
		return "", err
	}
	return url, nil
}
