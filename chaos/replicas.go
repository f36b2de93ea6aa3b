package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// replica is one statewrightd process, always on the same port, so that clients find it
// again after a restart. Its output goes to one log file across restarts.
type replica struct {
	idx    int
	port   int
	argv   []string
	env    []string
	dir    string
	logf   *os.File
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
	// proc is the running process, for halt: r.mu is held while a start waits.
	proc atomic.Pointer[os.Process]
}

// The session cache of every other replica, in bytes of its instances' contexts.
const tightCache = 16 * 1024

func (r *replica) target() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

func newReplica(idx int, python, repo, databaseURL, definitions, logPath string, writerQueue int, processes string, env []string) (*replica, error) {
	port, err := stablePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	argv := []string{python, "-m", "statewrightd.cli", "serve",
		"--listen", fmt.Sprintf("127.0.0.1:%d", port), "--database", databaseURL,
		"--definitions", definitions, "--grace", "2", "--log-level", "INFO",
		"--writer-queue", fmt.Sprint(writerQueue),
		// The watcher is one caller following every instance the run makes: more streams
		// than the per-caller default allows once a slow run has many instances in flight.
		"--max-watches", "10000"}
	if processes != "" {
		argv = append(argv, "--processes", processes)
	}
	if idx%2 == 1 {
		// A cache of a few dozen contexts: most steps through this replica read their
		// instance first, as a server does whose cache is full, while the other replicas
		// step the instances they hold, however stale.
		argv = append(argv, "--max-cached-contexts", fmt.Sprint(tightCache))
	}
	return &replica{idx: idx, port: port, argv: argv, env: env, dir: repo, logf: logf}, nil
}

// start runs the process and waits until it says it serves (or fails to).
func (r *replica) start(timeout time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), r.env...)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return err
	}
	r.starts++
	r.proc.Store(cmd.Process)
	fmt.Fprintf(r.logf, "==== chaos: replica %d start %d (pid %d) at %s\n", r.idx, r.starts, cmd.Process.Pid, time.Now().Format(time.RFC3339Nano))
	serving := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		said := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(r.logf, line)
			if !said && strings.Contains(line, "serving on") {
				said = true
				close(serving)
			}
		}
		io.Copy(io.Discard, pipe)
		cmd.Wait()
		close(exited)
	}()
	r.cmd, r.exited = cmd, exited
	select {
	case <-serving:
		return nil
	case <-exited:
		return fmt.Errorf("replica %d exited before serving (see its log)", r.idx)
	case <-time.After(timeout):
		signalPod(cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		return fmt.Errorf("replica %d did not serve within %s", r.idx, timeout)
	}
}

// signal sends sig to the replica: a drain (SIGTERM) to its statewrightd, which passes it
// on; any other signal to every process of it (see signalPod).
func (r *replica) signal(sig syscall.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || r.cmd.Process == nil {
		return fmt.Errorf("replica %d is not running", r.idx)
	}
	if sig == syscall.SIGTERM {
		return r.cmd.Process.Signal(sig)
	}
	return signalPod(r.cmd.Process.Pid, sig)
}

// signalPod sends sig to a replica's statewrightd and to every server process it started,
// as a kill or a freeze reaches every process of a container. With several server
// processes statewrightd is a supervisor, and they run in sessions of their own: one
// whose supervisor is killed drains and exits, so that a kill of the supervisor alone
// was a drain, and a pause of it paused nothing that serves. The processes are listed
// first: once the supervisor is dead, they are no longer its children.
func signalPod(pid int, sig syscall.Signal) error {
	children := childrenOf(pid)
	err := syscall.Kill(pid, sig)
	for _, child := range children {
		syscall.Kill(child, sig)
	}
	return err
}

func (r *replica) kill() {
	r.signal(syscall.SIGKILL)
	r.wait(10 * time.Second)
}

// halt kills the replica's processes at once, paused or not, without waiting for them.
func (r *replica) halt() {
	if p := r.proc.Load(); p != nil {
		signalPod(p.Pid, syscall.SIGCONT)
		signalPod(p.Pid, syscall.SIGKILL)
	}
}

func (r *replica) wait(d time.Duration) bool {
	r.mu.Lock()
	exited := r.exited
	r.mu.Unlock()
	if exited == nil {
		return true
	}
	select {
	case <-exited:
		return true
	case <-time.After(d):
		return false
	}
}

// stop drains the replica with SIGTERM (continuing it first, in case it is paused), and
// kills it if the drain takes too long.
func (r *replica) stop() {
	r.signal(syscall.SIGCONT)
	if r.signal(syscall.SIGTERM) == nil && !r.wait(20*time.Second) {
		r.kill()
	}
}

func (r *replica) close() { r.logf.Close() }
