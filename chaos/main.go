// Command chaos is Statewright's fault suite: a workload of several client, worker and
// watcher processes against two or more replicas on one PostgreSQL, a nemesis that
// injects faults while it runs, a history of every invocation and its outcome, and a
// checker that reads that history, the database and every watch stream and reports each
// broken promise with the operation and the instance concerned.
//
//	chaos run --size small|full|none --out DIR [--seed N] [--repo .] [--postgres-url URL]
//	          [--break MODE] [--faults kind,...] [--ops N] [--duration D] [--rate R] [--mix A,O,T]
//	          [--commit-delay D]
//	chaos check DIR            # check a run's directory again (the checker alone)
//
// The run spawns the other subcommands (client, worker, watch) as its own processes.
// Everything listens and connects on 127.0.0.1 only. RELIABILITY.md at the repository's
// root describes the promises, the method and the findings.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: chaos run|check|client|worker|watch [flags]")
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "run":
		err = runMain(args)
	case "check":
		err = checkMain(args)
	case "client":
		err = clientMain(args)
	case "worker":
		err = workerMain(args)
	case "watch":
		err = watchMain(args)
	default:
		err = fmt.Errorf("unknown subcommand %q", cmd)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func checkMain(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: chaos check DIR")
	}
	rep, err := checkDir(args[0])
	if err != nil {
		return err
	}
	if err := rep.write(args[0]); err != nil {
		return err
	}
	fmt.Print(rep.text())
	if rep.Anomalies > 0 {
		return fmt.Errorf("%d anomalies", rep.Anomalies)
	}
	return nil
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }
