package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// pgProxy forwards connections from the replicas to PostgreSQL and injects faults at exact
// protocol events, as tests/support/pgproxy.py does for the end-to-end tests. It reads
// the frontend protocol (the untyped startup packet, then typed messages), so that:
//
//   - armCut cuts the connection at the next COMMIT of a transaction that wrote a
//     workflow step (it inserted into workflow_history): right after the COMMIT was
//     forwarded (PostgreSQL commits, the replica never hears so) or right before it
//     (PostgreSQL never sees it and rolls back). Other transactions are never cut. A
//     step's statement sent outside a transaction block (a step alone in its group
//     commit) commits as it runs: it is then its COMMIT.
//   - stall holds every client-to-server message until resume: the database stalls;
//     holdCommits holds only the COMMITs of steps, so saves hang while reads go on.
//
// Statements are tracked per connection through Parse and Bind, so a step statement
// prepared once and then only bound by name is still recognised.
type pgProxy struct {
	upstream string
	ln       net.Listener
	mu       sync.Mutex
	armed    bool
	forward  bool // forward the COMMIT before cutting
	refuse   bool // once cut, refuse new connections until heal: the database went dark
	refusing bool
	refused  atomic.Int64
	gate     *gate
	commits  *gate // held: only the COMMITs of steps wait (saves hang, reads go on)
	conns    map[*proxyConn]struct{}
	cuts     atomic.Int64
	held     atomic.Int64
	closed   atomic.Bool
	// Every step's COMMIT waits this long before it is forwarded: a database far away (a
	// synchronous standby in another zone), which widens the moments between a read and
	// the commit of the step built on it.
	commitDelay time.Duration
}

const startupV3 = 196608

var stepMarker = []byte("INSERT INTO workflow_history")

// On Citus a step is a call of a shard function on a connection in autocommit: the call
// commits on its own, and carries its statements (the history insert among them) as
// parameters (see tests/support/pgproxy.py).
var (
	shardCall       = []byte("statewright_shard_rows")
	shardStepMarker = []byte("INSERT INTO %2$s")
)

type proxyConn struct {
	client, server net.Conn
	statements     map[string]bool // prepared statement name -> writes a step
	shardCalls     map[string]bool // prepared statement name -> calls a shard function
	wroteStep      bool
	inBlock        bool // BEGIN sent, no COMMIT or ROLLBACK yet
	cut            atomic.Bool
}

func (c *proxyConn) drop() {
	c.cut.Store(true)
	c.server.Close()
	c.client.Close()
}

// gate blocks passers while closed.
type gate struct {
	mu   sync.Mutex
	open chan struct{}
}

func newGate() *gate {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	return g
}

func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		g.open = make(chan struct{})
	default:
	}
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// pass waits while the gate is held, calling waiting first if it has to wait.
func (g *gate) pass(waiting func()) {
	g.mu.Lock()
	ch := g.open
	g.mu.Unlock()
	select {
	case <-ch:
	default:
		waiting()
		<-ch
	}
}

func startProxy(upstream string) (*pgProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &pgProxy{upstream: upstream, ln: ln, gate: newGate(), commits: newGate(), conns: map[*proxyConn]struct{}{}}
	go p.accept()
	return p, nil
}

func (p *pgProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// armCut cuts the next step COMMIT; with refuse, new connections are then refused until
// heal, so that the replica cannot read back what became of the COMMIT right away.
func (p *pgProxy) armCut(forwardCommit, refuse bool) {
	p.mu.Lock()
	p.armed, p.forward, p.refuse = true, forwardCommit, refuse
	p.mu.Unlock()
}

// heal disarms any pending cut and accepts connections again.
func (p *pgProxy) heal() {
	p.mu.Lock()
	p.armed, p.refuse, p.refusing = false, false, false
	p.mu.Unlock()
}

func (p *pgProxy) stall()  { p.gate.hold() }
func (p *pgProxy) resume() { p.gate.release(); p.commits.release() }

// holdCommits makes the COMMITs of steps wait until resume: every save hangs in flight,
// as on a database that has become slow to commit, while reads still answer.
func (p *pgProxy) holdCommits() { p.commits.hold() }

func (p *pgProxy) close() {
	p.closed.Store(true)
	p.gate.release()
	p.commits.release()
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.drop()
	}
	p.mu.Unlock()
}

func (p *pgProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refusing := p.refusing
		p.mu.Unlock()
		if refusing {
			p.refused.Add(1)
			client.Close() // the database is dark: accept and hang up at once
			continue
		}
		server, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
		if err != nil {
			client.Close()
			continue
		}
		c := &proxyConn{client: client, server: server, statements: map[string]bool{}, shardCalls: map[string]bool{}}
		p.mu.Lock()
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		go p.clientToServer(c)
		go p.serverToClient(c)
	}
}

func (p *pgProxy) forget(c *proxyConn) {
	c.drop()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// takeCut consumes an armed cut for this connection: "after", "before" or "".
func (p *pgProxy) takeCut(c *proxyConn) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.armed {
		return ""
	}
	p.armed = false
	// From now on nothing the server says reaches this client: the COMMIT's answer is
	// lost even if the server answers before the hang-up.
	c.cut.Store(true)
	p.cuts.Add(1)
	p.refusing = p.refuse
	if p.forward {
		return "after"
	}
	return "before"
}

func (p *pgProxy) send(c *proxyConn, msg []byte) error {
	p.gate.pass(func() { p.held.Add(1) })
	if p.closed.Load() {
		return io.ErrClosedPipe
	}
	_, err := c.server.Write(msg)
	return err
}

func (p *pgProxy) clientToServer(c *proxyConn) {
	defer p.forget(c)
	buf := make([]byte, 0, 1<<16)
	chunk := make([]byte, 1<<16)
	startupDone := false
	cutAtSync := false
	for {
		n, err := c.client.Read(chunk)
		if n > 0 {
			buf = append(buf, chunk[:n]...)
		}
		for {
			if !startupDone {
				if len(buf) < 8 {
					break
				}
				length := int(binary.BigEndian.Uint32(buf[:4]))
				if len(buf) < length {
					break
				}
				startupDone = binary.BigEndian.Uint32(buf[4:8]) == startupV3
				if p.send(c, buf[:length]) != nil {
					return
				}
				buf = append(buf[:0], buf[length:]...)
				continue
			}
			if len(buf) < 5 {
				break
			}
			kind := buf[0]
			length := int(binary.BigEndian.Uint32(buf[1:5]))
			if len(buf) < 1+length {
				break
			}
			msg := append([]byte(nil), buf[:1+length]...)
			buf = append(buf[:0], buf[1+length:]...)
			if cutAtSync {
				if p.send(c, msg) != nil {
					return
				}
				if kind == 'S' {
					lingerThenCut() // the extended-protocol COMMIT is complete: cut now
					return
				}
				continue
			}
			cut := ""
			if c.observe(kind, msg[5:]) {
				if p.commitDelay > 0 {
					time.Sleep(p.commitDelay)
				}
				p.commits.pass(func() { p.held.Add(1) })
				cut = p.takeCut(c)
			}
			switch cut {
			case "before":
				return // never forwarded: the server sees only end-of-file
			case "after":
				if p.send(c, msg) != nil {
					return
				}
				if kind == 'Q' {
					lingerThenCut()
					return
				}
				cutAtSync = true // Parse/Bind/Execute/Sync: forward up to Sync
				continue
			}
			if p.send(c, msg) != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// lingerThenCut gives PostgreSQL a moment to read the COMMIT before the connection
// closes, so that "after COMMIT" means the COMMIT was processed, not reset in flight.
func lingerThenCut() { time.Sleep(30 * time.Millisecond) }

func cstrings(payload []byte, count int) []string {
	parts := bytes.SplitN(payload, []byte{0}, count+1)
	out := make([]string, count)
	for i := 0; i < count && i < len(parts); i++ {
		out[i] = string(parts[i])
	}
	return out
}

func isBegin(query string) bool {
	word := bytes.ToUpper(bytes.TrimSpace([]byte(query)))
	return bytes.HasPrefix(word, []byte("BEGIN")) || bytes.HasPrefix(word, []byte("START TRANSACTION"))
}

func endOfTransaction(query string) string {
	word := bytes.ToUpper(bytes.TrimSpace(bytes.TrimRight(bytes.TrimSpace([]byte(query)), ";")))
	switch string(word) {
	case "COMMIT", "END":
		return "commit"
	case "ROLLBACK", "ABORT":
		return "rollback"
	}
	return ""
}

// observe tracks step-writing statements; it reports whether this message commits a
// transaction that wrote a step.
func (c *proxyConn) observe(kind byte, payload []byte) bool {
	var query string
	hasQuery, marked := false, false
	switch kind {
	case 'Q':
		query, hasQuery = cstrings(payload, 1)[0], true
		marked = bytes.Contains([]byte(query), stepMarker)
	case 'P':
		parts := cstrings(payload, 2)
		query, hasQuery = parts[1], true
		c.statements[parts[0]] = bytes.Contains([]byte(query), stepMarker)
		c.shardCalls[parts[0]] = bytes.Contains([]byte(query), shardCall)
	case 'B':
		parts := cstrings(payload, 2)
		marked = c.statements[parts[1]]
		if c.shardCalls[parts[1]] && bytes.Contains(payload, shardStepMarker) {
			return true // a step's shard call: it commits as it runs
		}
	}
	if marked {
		if !c.inBlock {
			return true // a step's statement outside a transaction block commits as it runs
		}
		c.wroteStep = true
	}
	if !hasQuery {
		return false
	}
	if isBegin(query) {
		c.inBlock = true
		return false
	}
	end := endOfTransaction(query)
	if end == "" {
		return false
	}
	c.inBlock = false
	wrote := c.wroteStep
	c.wroteStep = false
	return end == "commit" && wrote
}

func (p *pgProxy) serverToClient(c *proxyConn) {
	defer p.forget(c)
	buf := make([]byte, 1<<16)
	for {
		n, err := c.server.Read(buf)
		if n > 0 {
			if c.cut.Load() {
				return
			}
			if _, werr := c.client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil || c.cut.Load() {
			return
		}
	}
}

func (p *pgProxy) String() string {
	return fmt.Sprintf("pgproxy 127.0.0.1:%d -> %s", p.port(), p.upstream)
}
