package main

import (
	"os"
	"testing"
	"time"
)

// A server that will not stop in time is killed, with every process it started, and
// starts again: what restart falls back to.
func TestAKilledServerStartsAgain(t *testing.T) {
	if _, err := os.Stat(pgBin()); err != nil {
		t.Skip("no PostgreSQL here")
	}
	c, err := newCluster()
	if err != nil {
		t.Fatal(err)
	}
	defer c.stop()
	if _, err := psql(c.url(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if err := c.kill(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := psql(c.url(), "SELECT 1"); err == nil {
		t.Fatal("the server still answers after the kill")
	}
	if err := c.start(); err != nil {
		t.Fatal(err)
	}
	if _, err := psql(c.url(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
}
