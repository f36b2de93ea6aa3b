package main

import (
	"encoding/binary"
	"testing"
	"time"
)

func message(kind byte, parts ...string) []byte {
	var payload []byte
	for _, p := range parts {
		payload = append(append(payload, p...), 0)
	}
	msg := []byte{kind, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(msg[1:], uint32(4+len(payload)))
	return append(msg, payload...)
}

func TestTheProxyRecognisesTheCommitOfAStepOnly(t *testing.T) {
	c := &proxyConn{statements: map[string]bool{}, shardCalls: map[string]bool{}}
	observe := func(m []byte) bool { return c.observe(m[0], m[5:]) }
	if observe(message('Q', "BEGIN")) || observe(message('Q', "SELECT 1")) || observe(message('Q', "COMMIT")) {
		t.Fatal("a transaction that wrote no step was taken for a step")
	}
	observe(message('Q', "BEGIN"))
	if observe(message('Q', "WITH x AS (INSERT INTO workflow_history (a) SELECT 1) SELECT 1")) {
		t.Fatal("a step's statement in a transaction block was taken for its COMMIT")
	}
	if !observe(message('Q', "commit;")) {
		t.Fatal("the COMMIT of a step was not recognised")
	}
	// Extended protocol: a statement prepared once, then bound by name.
	observe(message('Q', "BEGIN"))
	observe(message('P', "s1", "INSERT INTO workflow_history (a) VALUES ($1)"))
	observe(message('B', "", "s1"))
	if observe(message('Q', "ROLLBACK")) {
		t.Fatal("a ROLLBACK was taken for a COMMIT")
	}
	observe(message('P', "", "BEGIN"))
	observe(message('B', "", ""))
	observe(message('B', "", "s1"))
	if !observe(message('P', "", "COMMIT")) {
		t.Fatal("the COMMIT of a step bound by name was not recognised")
	}
	// A step alone runs outside a transaction block: its statement commits as it runs.
	if !observe(message('B', "", "s1")) {
		t.Fatal("a step's statement outside a transaction block was not taken for its COMMIT")
	}
	// Citus: a step is a shard function call that commits on its own, its statements
	// among its parameters; a call of it that writes no step (a claim) is not one.
	observe(message('P', "_pg3_1", "SELECT * FROM statewright_shard_rows($1, $2, $3::json[], $4, $5)"))
	if observe(message('B', "", "_pg3_1", "route", "{UPDATE %3$s t SET claimed_until}")) {
		t.Fatal("a shard call that writes no step was taken for a step")
	}
	if !observe(message('B', "", "_pg3_1", "route", "{WITH input AS (...) INSERT INTO %2$s ...}")) {
		t.Fatal("the shard call of a step was not recognised")
	}
}

func TestTheGateHoldsPassersUntilReleased(t *testing.T) {
	g := newGate()
	waited := 0
	g.pass(func() { waited++ })
	g.hold()
	passed := make(chan struct{})
	go func() { g.pass(func() { waited++ }); close(passed) }()
	select {
	case <-passed:
		t.Fatal("passed a held gate")
	case <-time.After(50 * time.Millisecond):
	}
	g.release()
	<-passed
	if waited != 1 {
		t.Fatalf("waited %d times, want 1", waited)
	}
}
