package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cluster is a private, throwaway PostgreSQL 15 that the run may restart at will. As in
// scripts/with-postgres: it runs as the postgres user when we are root (PostgreSQL refuses
// root), on a free loopback port, with a data directory under a temporary directory that
// is removed when the run ends. fsync and synchronous_commit stay on: the run checks
// durability.
type cluster struct {
	bin   string
	dir   string
	data  string
	port  int
	runAs []string
	uid   int
	gid   int
	extra string // more server options (a Citus node's)
}

// database is the run's own database server: one PostgreSQL, or a Citus cluster.
type database interface {
	url() string
	restart(mode string) error
	stop()
	createDatabase(name string) (string, error) // a fresh database for the run; its URL
}

func pgBin() string {
	if b := os.Getenv("PGBIN"); b != "" {
		return b
	}
	return "/usr/lib/postgresql/15/bin"
}

func newCluster() (*cluster, error) { return newClusterWith("") }

func newClusterWith(extra string) (*cluster, error) {
	c := &cluster{bin: pgBin(), uid: -1, gid: -1, extra: extra}
	if _, err := os.Stat(filepath.Join(c.bin, "initdb")); err != nil {
		return nil, fmt.Errorf("PostgreSQL 15 binaries not found in %s (apt-get install postgresql-15)", c.bin)
	}
	if os.Getuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs a postgres user: %w", err)
		}
		c.uid, _ = strconv.Atoi(u.Uid)
		c.gid, _ = strconv.Atoi(u.Gid)
		c.runAs = []string{"runuser", "-u", "postgres", "--"}
	}
	dir, err := os.MkdirTemp("", "statewright-chaos-pg.")
	if err != nil {
		return nil, err
	}
	c.dir, c.data = dir, filepath.Join(dir, "data")
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Mkdir(c.data, 0o700); err != nil {
		return nil, err
	}
	if c.uid >= 0 {
		for _, p := range []string{dir, c.data} {
			if err := os.Chown(p, c.uid, c.gid); err != nil {
				return nil, err
			}
		}
	}
	if c.port, err = stablePort(); err != nil {
		return nil, err
	}
	if out, err := c.pg("initdb", "-D", c.data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if err := c.start(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *cluster) pg(tool string, args ...string) ([]byte, error) {
	argv := append(append([]string{}, c.runAs...), append([]string{filepath.Join(c.bin, tool)}, args...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// options: authentication_timeout bounds a stop. A connection that arrives while the
// server shuts down gets a process of its own that only refuses it, and the postmaster
// signals none of those, not even after an immediate stop's SIGKILL, but waits for each to
// end: one whose client is slow to finish its (SSL) start-up lives up to the timeout, a
// minute by default. The replicas and the coordinator reconnect at once, so a Citus
// worker's immediate stop and start took 17 s instead of one or two.
func (c *cluster) options() string {
	return strings.TrimSpace(fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c max_connections=300 -c shared_buffers=128MB -c authentication_timeout=5s %s", c.port, c.dir, c.extra))
}

func (c *cluster) start() error {
	if out, err := c.pg("pg_ctl", "-D", c.data, "-w", "-t", "60", "-l", filepath.Join(c.dir, "server.log"), "-o", c.options(), "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	return nil
}

// restart stops the server in mode "fast" (clients disconnected, a clean shutdown) or
// "immediate" (no shutdown at all: crash recovery at the next start), then starts it.
func (c *cluster) restart(mode string) error {
	// An immediate stop ends the server at once, or not at all: a loaded Citus worker's
	// postmaster, told to, was still waiting for its children a minute later (see options;
	// the kill below is the backstop).
	wait := "60"
	if mode == "immediate" {
		wait = "10"
	}
	if out, err := c.pg("pg_ctl", "-D", c.data, "-m", mode, "-w", "-t", wait, "stop"); err != nil {
		// Before the kill, such a server went down later on its own and nothing started it
		// again, leaving the rest of the run without half its shards. The fault is a
		// restart: kill what is left of the server, then start it.
		fmt.Fprintf(os.Stderr, "chaos: pg_ctl stop -m %s on port %d: %v (%s); killing the server\n", mode, c.port, err, bytes.TrimSpace(out))
		if kerr := c.kill(30 * time.Second); kerr != nil {
			return fmt.Errorf("pg_ctl stop -m %s: %v\n%s\nthen: %v", mode, err, out, kerr)
		}
	}
	var err error
	for try := 0; try < 3; try++ {
		if err = c.start(); err == nil {
			return nil
		}
		time.Sleep(2 * time.Second)
	}
	return err
}

// kill ends the server's postmaster and every process it started, at once, and waits
// until they are gone.
func (c *cluster) kill(within time.Duration) error {
	data, err := os.ReadFile(filepath.Join(c.data, "postmaster.pid"))
	if err != nil {
		return nil // no postmaster.pid: the server is down already
	}
	postmaster, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0]))
	if err != nil || postmaster <= 0 {
		return fmt.Errorf("postmaster.pid: %q", data)
	}
	pids := append(childrenOf(postmaster), postmaster)
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		alive := 0
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				alive++
			}
		}
		if alive == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the server's processes (%v) did not end within %s", pids, within)
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command (which may hold spaces) start after its last ')'.
		rest := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(rest) > 1 && rest[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

func (c *cluster) stop() {
	c.pg("pg_ctl", "-D", c.data, "-m", "immediate", "-w", "stop")
	os.RemoveAll(c.dir)
}

func (c *cluster) url() string {
	return fmt.Sprintf("postgresql://postgres@127.0.0.1:%d/postgres", c.port)
}

func (c *cluster) createDatabase(name string) (string, error) {
	if _, err := psql(c.url(), "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return withDatabase(c.url(), name), nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// psql runs one statement through psql (unaligned, tuples only) and returns its output.
func psql(url, sql string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(pgBin(), "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("psql: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// withDatabase is url with its database name replaced.
func withDatabase(url, name string) string {
	i := strings.LastIndex(url, "/")
	q := ""
	if j := strings.Index(url[i:], "?"); j >= 0 {
		q = url[i+j:]
	}
	return url[:i+1] + name + q
}

// withPort is a loopback url rerouted to port (the proxy), with SSL and GSS negotiation
// off so that the proxy sees the plain startup packet.
func withPort(url string, port int) string {
	at := strings.Index(url, "@")
	rest := url[at+1:]
	slash := strings.Index(rest, "/")
	return fmt.Sprintf("%s127.0.0.1:%d%s?sslmode=disable&gssencmode=disable", url[:at+1], port, rest[slash:])
}

// dumpTables writes each table of the run's database as JSON lines into dir: what the
// checker reads as the database's final word.
func dumpTables(url, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tables := map[string]string{
		"instances.jsonl": `SELECT row_to_json(t) FROM (SELECT workflow_id, definition, state, status, context,
			revision, error FROM workflow_instances ORDER BY workflow_id) t`,
		"history.jsonl": `SELECT row_to_json(t) FROM (SELECT workflow_id, revision, event, transitions, state,
			status, context, error, timers, actor, input, (extract(epoch FROM time) * 1000000)::bigint AS time_us
			FROM workflow_history ORDER BY workflow_id, revision) t`,
		"tasks.jsonl": `SELECT row_to_json(t) FROM (SELECT workflow_id, task_id, revision, state, status, attempt,
			max_attempts, last_error, item_index, result FROM workflow_tasks ORDER BY workflow_id, revision) t`,
		"timers.jsonl": `SELECT row_to_json(t) FROM (SELECT workflow_id, timer_id, revision, transition, target,
			(extract(epoch FROM due_time) * 1000000)::bigint AS due_us FROM workflow_timers
			ORDER BY workflow_id, timer_id) t`,
		"schedules.jsonl": `SELECT row_to_json(t) FROM (SELECT schedule_id, document,
			(extract(epoch FROM create_time) * 1000000)::bigint AS create_us FROM schedules ORDER BY schedule_id) t`,
	}
	for name, sql := range tables {
		out, err := psql(url, sql)
		if err != nil {
			return fmt.Errorf("dumping %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), out, 0o644); err != nil {
			return err
		}
	}
	return nil
}
