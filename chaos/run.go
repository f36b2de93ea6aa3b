package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	pb "github.com/statewright/statewright/clients/go/statewright/v1"
)

// runConfig is one run: its size, its seed and where it writes.
type runConfig struct {
	Size        string        `json:"size"`
	Seed        uint64        `json:"seed"`
	Out         string        `json:"out"`
	Repo        string        `json:"repo"`
	Python      string        `json:"python"`
	PostgresURL string        `json:"postgres_url,omitempty"` // an existing server: no restarts
	DB          string        `json:"db"`                     // postgres, or citus (a coordinator and two workers)
	Break       string        `json:"break,omitempty"`
	Replicas    int           `json:"replicas"`
	Clients     int           `json:"clients"`
	Lanes       int           `json:"lanes"`
	Workers     int           `json:"workers"`
	Ops         int64         `json:"ops"`
	Rate        float64       `json:"rate"`
	Duration    time.Duration `json:"duration"`
	Faults      []string      `json:"faults"`
	Rounds      int           `json:"rounds"`
	Gap         time.Duration `json:"gap"`
	Overlap     float64       `json:"overlap"`
	Pause       time.Duration `json:"pause"`
	Flood       int           `json:"flood"`
	WriterQueue int           `json:"writer_queue"`
	FullPlan    bool          `json:"full_plan"` // keep the load on until every planned fault ran
	SettleLimit time.Duration `json:"settle_limit"`
	Layout      layout        `json:"layout"`
	Watch       string        `json:"watch"`
	Mix         string        `json:"mix"` // the clients' shares of accounts, orders, countdowns
	// Server processes per replica ("": the server's default, one per CPU).
	Processes string `json:"processes,omitempty"`
	// Each step's COMMIT is delayed this long by the proxy (a database far away).
	CommitDelay time.Duration `json:"commit_delay,omitempty"`
	// The limited queue and the schedule (sidework.go).
	Side sideConfig `json:"side"`
}

// presets: the small run of `make test` and the large one of `make chaos`.
func preset(size string) (runConfig, error) {
	switch size {
	case "small":
		// Duration only bounds the load (a loaded machine makes its 5,000 operations slowly).
		return runConfig{Size: size, Replicas: 2, Clients: 2, Lanes: 6, Workers: 2, Ops: 5000, Rate: 70,
			Duration: 240 * time.Second, Faults: allFaults, Rounds: 1, Gap: 3 * time.Second, Overlap: 0,
			Pause: 7 * time.Second, Flood: 600, WriterQueue: 128, FullPlan: true, Watch: "all", SettleLimit: 90 * time.Second,
			Layout: layout{Epoch: 10 * time.Second, Accounts: 14, Orders: 8, Timers: 6}}, nil
	case "full":
		// The load goes on until every planned fault has run (and at least Ops were
		// made); Duration only bounds it.
		return runConfig{Size: size, Replicas: 2, Clients: 4, Lanes: 8, Workers: 2, Ops: 100000, Rate: 220,
			Duration: 20 * time.Minute, Faults: allFaults, Rounds: 6, Gap: 4 * time.Second, Overlap: 0.3,
			Pause: 7 * time.Second, Flood: 1000, WriterQueue: 128, FullPlan: true, Watch: "all", SettleLimit: 90 * time.Second,
			Layout: layout{Epoch: 12 * time.Second, Accounts: 24, Orders: 12, Timers: 8}}, nil
	case "none":
		// No faults: the checker's own tests (break modes) use it, with their own sizes.
		// One process per replica: each starts in half the time, and a break is a break
		// whatever the processes.
		return runConfig{Size: size, Replicas: 2, Clients: 2, Lanes: 6, Workers: 2, Ops: 1000, Rate: 100, Processes: "1",
			Duration: 40 * time.Second, Rounds: 1, Gap: 3 * time.Second, Pause: 7 * time.Second,
			Flood: 600, WriterQueue: 128, Watch: "all", SettleLimit: 30 * time.Second,
			Layout: layout{Epoch: 8 * time.Second, Accounts: 8, Orders: 10, Timers: 12}}, nil
	}
	return runConfig{}, fmt.Errorf("--size must be small, full or none; got %q", size)
}

func runMain(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	size := fs.String("size", "small", "small (make test), full (make chaos), or none (no faults)")
	seed := fs.Uint64("seed", 0, "random seed (0: from the clock); the report names it for a replay")
	out := fs.String("out", "", "directory for the history, logs and report (required)")
	repo := fs.String("repo", ".", "the repository root")
	python := fs.String("python", "", "the Python that runs statewrightd (default REPO/.venv/bin/python)")
	pgURL := fs.String("postgres-url", "", "use this PostgreSQL (a fresh database on it) instead of a private one; no restarts")
	db := fs.String("db", "postgres", "the run's own database: postgres, or citus (a coordinator and two workers; adds the worker-restart fault)")
	breakMode := fs.String("break", "", "test-only break modes of the server, comma-separated (tests/chaos/breaks.py)")
	faults := fs.String("faults", "", "fault kinds, comma-separated (default: the size's; \"none\" for no faults)")
	ops := fs.Int64("ops", 0, "client invocations (default: the size's)")
	duration := fs.Duration("duration", 0, "longest time the load runs (default: the size's)")
	rate := fs.Float64("rate", 0, "client invocations per second, at most (default: the size's)")
	mix := fs.String("mix", defaultMix, "the clients' shares of operations on accounts, orders and countdowns")
	commitDelay := fs.Duration("commit-delay", 0, "delay every step's COMMIT this long (a database far away)")
	fs.Parse(args)
	if _, err := parseMix(*mix); err != nil {
		return err
	}
	cfg, err := preset(*size)
	if err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("--out is required")
	}
	cfg.Seed = *seed
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano()) % 1_000_000_007
	}
	cfg.Out, _ = filepath.Abs(*out)
	cfg.Repo, _ = filepath.Abs(*repo)
	cfg.Python = *python
	if cfg.Python == "" {
		cfg.Python = filepath.Join(cfg.Repo, ".venv", "bin", "python")
	}
	cfg.PostgresURL, cfg.Break, cfg.Mix, cfg.CommitDelay, cfg.DB = *pgURL, *breakMode, *mix, *commitDelay, *db
	switch {
	case cfg.DB != "postgres" && cfg.DB != "citus":
		return fmt.Errorf("--db must be postgres or citus; got %q", cfg.DB)
	case cfg.DB == "citus" && cfg.PostgresURL != "":
		return fmt.Errorf("--db citus runs its own cluster (no --postgres-url)")
	case cfg.DB == "citus" && cfg.Faults != nil:
		cfg.Faults = append(append([]string(nil), cfg.Faults...), faultWorkerRestart)
	}
	if cfg.DB == "citus" && cfg.Size == "full" {
		// Three PostgreSQL servers beside the replicas, clients and workers on the same
		// cores make operations at about a third of one PostgreSQL's rate: the full run's
		// 100,000 operations need longer, and the load still ends once they are made.
		cfg.Duration = 80 * time.Minute
	}
	if *faults == "none" {
		cfg.Faults = nil
	} else if *faults != "" {
		cfg.Faults = splitList(*faults)
	}
	for _, f := range cfg.Faults {
		if _, ok := faultGroup[f]; !ok {
			return fmt.Errorf("unknown fault kind %q", f)
		}
		if cfg.PostgresURL != "" && (f == faultPGFast || f == faultPGImmediate) {
			return fmt.Errorf("%s needs the run's own PostgreSQL (no --postgres-url)", f)
		}
		if cfg.DB != "citus" && f == faultWorkerRestart {
			return fmt.Errorf("%s needs a Citus cluster (--db citus)", f)
		}
	}
	if *ops > 0 {
		cfg.Ops = *ops
	}
	if *duration > 0 {
		cfg.Duration = *duration
	}
	if *rate > 0 {
		cfg.Rate = *rate
	}
	stopOnInterrupt()
	rep, err := execute(cfg)
	if err != nil {
		return err
	}
	if rep.Anomalies > 0 {
		return fmt.Errorf("%d anomalies (seed %d): see %s", rep.Anomalies, cfg.Seed, filepath.Join(cfg.Out, "report.txt"))
	}
	return nil
}

// child is one of the run's own processes (a client, a worker, the watcher).
type child struct {
	name string
	cmd  *exec.Cmd
	done chan error
}

func spawn(dir, name string, args ...string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "procs", name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	c := &child{name: name, cmd: cmd, done: make(chan error, 1)}
	onInterrupt(func() { cmd.Process.Kill() })
	go func() { c.done <- cmd.Wait(); logf.Close() }()
	return c, nil
}

func (c *child) wait(d time.Duration) error {
	select {
	case err := <-c.done:
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		return nil
	case <-time.After(d):
		c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("%s did not finish within %s", c.name, d)
	}
}

func (c *child) signal(s syscall.Signal) { c.cmd.Process.Signal(s) }

type runMeta struct {
	Config     runConfig `json:"config"`
	Started    int64     `json:"started"`
	LoadEnded  int64     `json:"load_ended"`
	FaultsDone int64     `json:"faults_done"`
	Settled    int64     `json:"settled"` // 0: did not settle in time
	Dumped     int64     `json:"dumped"`
	Ended      int64     `json:"ended"`
	Final      final     `json:"final"`
	Side       sideTimes `json:"side"`
}

type final struct {
	Recovery    map[string]int64    `json:"recovery_required"` // per replica, after the faults stopped
	OpenTasks   int64               `json:"open_tasks"`
	ArmedTimers int64               `json:"armed_timers"`
	Tracebacks  map[string]int      `json:"tracebacks"`
	Exceptions  map[string][]string `json:"exceptions,omitempty"` // per replica log: the first tracebacks' last lines
	Unexpected  map[string]int      `json:"unexpected"`           // steps that failed unexpectedly, per replica log
	SettleError string              `json:"settle_error,omitempty"`
}

func execute(cfg runConfig) (*report, error) {
	if err := prepareOut(cfg.Out); err != nil {
		return nil, err
	}
	meta := runMeta{Config: cfg, Started: nowNS()}
	fmt.Printf("chaos: %s run, seed %d, into %s\n", cfg.Size, cfg.Seed, cfg.Out)
	rng := rand.New(rand.NewPCG(cfg.Seed, 1))

	var pg database
	admin := cfg.PostgresURL
	if admin == "" {
		var err error
		if cfg.DB == "citus" {
			pg, err = newCitusCluster(2)
		} else {
			pg, err = newCluster()
		}
		if err != nil {
			return nil, err
		}
		onInterrupt(pg.stop)
		defer pg.stop()
		admin = pg.url()
	}
	dbName := fmt.Sprintf("chaos_%d_%d", cfg.Seed, time.Now().UnixNano()%1_000_000)
	var url string
	if pg != nil {
		var err error
		if url, err = pg.createDatabase(dbName); err != nil {
			return nil, err
		}
	} else {
		if _, err := psql(admin, "CREATE DATABASE "+dbName); err != nil {
			return nil, err
		}
		url = withDatabase(admin, dbName)
	}
	if cfg.PostgresURL != "" {
		drop := func() { psql(admin, "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)") }
		onInterrupt(drop)
		defer drop()
	}
	upstream := strings.TrimPrefix(url, "postgresql://postgres@")
	upstream = upstream[:strings.Index(upstream, "/")]
	proxy, err := startProxy(upstream)
	if err != nil {
		return nil, err
	}
	defer proxy.close()
	proxy.commitDelay = cfg.CommitDelay

	env := []string{"PYTHONPATH=" + cfg.Repo}
	if cfg.Break != "" {
		env = append(env, "STATEWRIGHT_TEST_HOOKS=tests.chaos.breaks", "STATEWRIGHT_CHAOS_BREAK="+cfg.Break)
	}
	definitions := filepath.Join(cfg.Repo, "chaos", "definitions")
	// The checker reads the definitions the run served from its directory.
	if err := copyDefinitions(definitions, filepath.Join(cfg.Out, "definitions")); err != nil {
		return nil, err
	}
	var replicas []*replica
	defer func() {
		for _, r := range replicas {
			r.stop()
			r.close()
		}
	}()
	for i := 0; i < cfg.Replicas; i++ {
		r, err := newReplica(i, cfg.Python, cfg.Repo, withPort(url, proxy.port()), definitions,
			filepath.Join(cfg.Out, fmt.Sprintf("replica-%d.log", i)), cfg.WriterQueue, cfg.Processes, env)
		if err != nil {
			return nil, err
		}
		onInterrupt(r.halt)
		replicas = append(replicas, r)
	}
	// All at once: the server's migration takes an advisory lock, so one replica
	// migrates and the others find nothing left to do.
	started := make(chan error, len(replicas))
	for _, r := range replicas {
		go func() { started <- r.start(90 * time.Second) }()
	}
	for range replicas {
		if err := <-started; err != nil {
			return nil, err
		}
	}
	var targets []string
	for _, r := range replicas {
		targets = append(targets, r.target())
	}
	conns, err := dialAll(targets)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	hist, err := createJSONL(filepath.Join(cfg.Out, "history", "nemesis.jsonl"))
	if err != nil {
		return nil, err
	}
	faultLog, err := createJSONL(filepath.Join(cfg.Out, "faults.jsonl"))
	if err != nil {
		return nil, err
	}
	nem := &nemesis{replicas: replicas, pg: pg, proxy: proxy, conns: conns, hist: hist, log: faultLog,
		rng: rand.New(rand.NewPCG(cfg.Seed, 2)), pause: cfg.Pause, floodN: cfg.Flood}

	cfg.Side = defaultSide
	if err := setUpSide(conns, &cfg.Side, &meta.Side); err != nil {
		return nil, err
	}
	meta.Config.Side = cfg.Side
	side, err := startSideLoad(conns, cfg.Out, cfg.Side, cfg.Seed)
	if err != nil {
		return nil, err
	}
	cfg.Layout.Start = time.Now().Add(time.Second).UnixNano()
	meta.Config.Layout = cfg.Layout
	tlist := strings.Join(targets, ",")
	lay := layoutArgs(cfg.Layout)
	timeout := "5s"
	var clients, workers []*child
	watch, err := spawn(cfg.Out, "watch", append([]string{"watch", "--targets", tlist, "--proc", "v0",
		"--seed", fmt.Sprint(rng.Uint64()), "--out", filepath.Join(cfg.Out, "watch", "v0.jsonl"),
		"--watch", cfg.Watch, "--duration", cfg.Duration.String(),
		"--final", filepath.Join(cfg.Out, "final-revisions.json"), "--final-wait", (cfg.SettleLimit / 2).String(),
		"--rest-limit", restLimit(cfg).String()}, lay...)...)
	if err != nil {
		return nil, err
	}
	for i := 0; i < cfg.Workers; i++ {
		name := fmt.Sprintf("w%d", i)
		w, err := spawn(cfg.Out, name, "worker", "--targets", tlist, "--proc", name, "--seed", fmt.Sprint(rng.Uint64()),
			"--out", filepath.Join(cfg.Out, "history", name+".jsonl"), "--duration", (cfg.Duration + 5*time.Minute).String(),
			"--timeout", timeout)
		if err != nil {
			return nil, err
		}
		workers = append(workers, w)
	}
	// With faults to run to the end of their plan, the load holds on until they are over.
	hold := cfg.FullPlan && len(cfg.Faults) > 0
	for i := 0; i < cfg.Clients; i++ {
		name := fmt.Sprintf("c%d", i)
		ops := cfg.Ops / int64(cfg.Clients)
		if int64(i) < cfg.Ops%int64(cfg.Clients) {
			ops++
		}
		c, err := spawn(cfg.Out, name, append([]string{"client", "--targets", tlist, "--proc", name,
			"--seed", fmt.Sprint(rng.Uint64()), "--out", filepath.Join(cfg.Out, "history", name+".jsonl"),
			"--lanes", fmt.Sprint(cfg.Lanes), "--ops", fmt.Sprint(ops), fmt.Sprintf("--hold=%v", hold), "--mix", cfg.Mix,
			"--duration", cfg.Duration.String(), "--rate", fmt.Sprint(cfg.Rate / float64(cfg.Clients)),
			"--timeout", timeout}, lay...)...)
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
	}

	ctx, stopFaults := context.WithCancel(context.Background())
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		time.Sleep(2 * time.Second)
		nem.run(ctx, nem.plan(cfg.Faults, cfg.Rounds), cfg.Gap, cfg.Overlap)
	}()
	if hold {
		go func() {
			<-faultsDone
			for _, c := range clients {
				c.signal(syscall.SIGUSR1) // the faults are over: stop once the budget is spent
			}
		}()
	}
	var problems []string
	for _, c := range clients {
		if err := c.wait(cfg.Duration + time.Minute); err != nil {
			problems = append(problems, err.Error())
		}
	}
	meta.LoadEnded = nowNS()
	if err := pauseSchedule(conns, &meta.Side); err != nil {
		problems = append(problems, "pausing the schedule: "+err.Error())
	}
	side.finish()
	watch.signal(syscall.SIGUSR2)
	if cfg.FullPlan {
		select {
		case <-faultsDone:
		case <-time.After(3 * time.Minute):
		}
	}
	stopFaults()
	<-faultsDone
	meta.FaultsDone = nowNS()
	// Before the settling: a batch still working would step its instances after the
	// final revisions were read.
	if err := side.endBulk(filepath.Join(cfg.Out, bulkFile), 2*time.Minute); err != nil {
		problems = append(problems, "reading the batch operations: "+err.Error())
	}
	fmt.Printf("chaos: load done (%.0fs), %d faults injected\n", float64(meta.LoadEnded-meta.Started)/1e9, nem.faults)

	for _, w := range workers {
		w.signal(syscall.SIGUSR1)
	}
	meta.Final, meta.Settled = settle(url, conns, cfg.SettleLimit)
	for _, w := range workers {
		w.signal(syscall.SIGTERM)
	}
	for _, w := range workers {
		if err := w.wait(30 * time.Second); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if err := finalRevisions(url, filepath.Join(cfg.Out, "final-revisions.json")); err != nil {
		problems = append(problems, err.Error())
	}
	watch.signal(syscall.SIGUSR1)
	if err := watch.wait(cfg.SettleLimit/2 + restLimit(cfg) + time.Minute); err != nil {
		problems = append(problems, err.Error())
	}
	if err := dumpTables(url, filepath.Join(cfg.Out, "db")); err != nil {
		return nil, err
	}
	meta.Dumped = nowNS()
	hist.close()
	faultLog.close()
	stopAll(replicas)
	meta.Final.Tracebacks, meta.Final.Exceptions, meta.Final.Unexpected = scanLogs(cfg.Out, len(replicas))
	replicas = nil
	meta.Ended = nowNS()
	if err := writeJSON(filepath.Join(cfg.Out, "run.json"), meta); err != nil {
		return nil, err
	}
	rep, err := checkDir(cfg.Out)
	if err != nil {
		return nil, err
	}
	rep.RunProblems = problems
	if len(problems) > 0 {
		rep.Anomalies += len(problems)
	}
	if err := rep.write(cfg.Out); err != nil {
		return nil, err
	}
	fmt.Print(rep.text())
	return rep, nil
}

// stopAll drains every replica at once.
func stopAll(replicas []*replica) {
	var wg sync.WaitGroup
	for _, r := range replicas {
		wg.Add(1)
		go func() { defer wg.Done(); r.stop(); r.close() }()
	}
	wg.Wait()
}

// prepareOut makes an empty output directory, removing an earlier run's (and nothing
// that is not one: a run marks its directory).
func prepareOut(dir string) error {
	marker := filepath.Join(dir, ".chaos-run")
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		if _, err := os.Stat(marker); err != nil {
			return fmt.Errorf("%s is not empty and holds no earlier run; refusing to overwrite it", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	for _, d := range []string{"history", "watch", "procs", "db"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(marker, nil, 0o644)
}

// settle waits until the run's work has come to rest after the faults: no open task, no
// armed timer, no instance waiting for a recovery re-check on any replica.
func settle(url string, conns []*replicaConn, limit time.Duration) (final, int64) {
	deadline := time.Now().Add(limit)
	f := final{Recovery: map[string]int64{}}
	for {
		f.SettleError = ""
		var open, armed int64
		// Every timer of the run's definitions is short and every task finite: at rest,
		// nothing is armed and nothing is open.
		if out, err := psql(url, `SELECT (SELECT count(*) FROM workflow_tasks WHERE status IN ('SCHEDULED', 'LEASED', 'BACKOFF')),
			(SELECT count(*) FROM workflow_timers)`); err != nil {
			f.SettleError = err.Error()
		} else {
			fmt.Sscanf(strings.TrimSpace(string(out)), "%d|%d", &open, &armed)
		}
		f.OpenTasks, f.ArmedTimers = open, armed
		recovering := int64(0)
		for _, rc := range conns {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			d, err := rc.wf.GetDiagnostics(ctx, &pb.GetDiagnosticsRequest{})
			cancel()
			if err != nil {
				f.SettleError = fmt.Sprintf("diagnostics of %s: %v", rc.target, err)
				recovering++
				continue
			}
			f.Recovery[rc.target] = d.GetAdmissions().GetRecoveryRequired()
			recovering += d.GetAdmissions().GetRecoveryRequired()
		}
		if f.SettleError == "" && open == 0 && armed == 0 && recovering == 0 {
			return f, nowNS()
		}
		if time.Now().After(deadline) {
			return f, 0
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func finalRevisions(url, path string) error {
	out, err := psql(url, "SELECT coalesce(json_object_agg(workflow_id, revision), '{}') FROM workflow_instances")
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// scanLogs counts, per replica log, the tracebacks (each a server bug, or a fault the
// server did not handle) with the last line of the first few, and the steps that failed
// unexpectedly (a server bug by definition).
func scanLogs(dir string, n int) (tracebacks map[string]int, exceptions map[string][]string, unexpected map[string]int) {
	tracebacks, exceptions, unexpected = map[string]int{}, map[string][]string{}, map[string]int{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("replica-%d.log", i)
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		text := string(data)
		tracebacks[name] = strings.Count(text, "Traceback (most recent call last)")
		unexpected[name] = strings.Count(text, "failed unexpectedly")
		lines := strings.Split(text, "\n")
		for j := 0; j < len(lines) && len(exceptions[name]) < 5; j++ {
			if !strings.HasPrefix(lines[j], "Traceback (most recent call last)") {
				continue
			}
			// The exception is the first line after the traceback that is not indented.
			for k := j + 1; k < len(lines); k++ {
				if lines[k] != "" && lines[k][0] != ' ' {
					exceptions[name] = append(exceptions[name], truncate(lines[k], 300))
					j = k
					break
				}
			}
		}
	}
	return tracebacks, exceptions, unexpected
}

// copyDefinitions copies the definitions' files into the run's directory.
func copyDefinitions(from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	paths, err := filepath.Glob(filepath.Join(from, "*.yaml"))
	if err != nil {
		return err
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, filepath.Base(p)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// restLimit: how long the watcher may take, once the run has settled, to follow from
// revision 0 the instances no epoch listed (floods', probes', the side workloads').
func restLimit(cfg runConfig) time.Duration { return 4 * cfg.SettleLimit }
