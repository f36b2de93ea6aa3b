package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// running says whether pid is a live process (not gone, not a zombie).
func running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(rest) > 0 && rest[0] != "Z"
}

func state(pid int) string {
	stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(rest) == 0 {
		return ""
	}
	return rest[0]
}

// A kill or a pause of a replica reaches the server processes its supervisor started,
// not the supervisor alone.
func TestAKillOrAPauseReachesEveryProcessOfAReplica(t *testing.T) {
	// A stand-in for a supervisor: a shell with two children of its own.
	cmd := exec.Command("sh", "-c", "sleep 60 & sleep 60 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	defer cmd.Process.Kill()
	var children []int
	for deadline := time.Now().Add(5 * time.Second); len(children) < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in started %v, not two children", children)
		}
		time.Sleep(20 * time.Millisecond)
		children = childrenOf(cmd.Process.Pid)
	}
	all := append([]int{cmd.Process.Pid}, children...)
	if err := signalPod(cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for _, pid := range all {
		for deadline := time.Now().Add(5 * time.Second); state(pid) != "T"; {
			if time.Now().After(deadline) {
				t.Fatalf("process %d not stopped by a pause: state %q", pid, state(pid))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	signalPod(cmd.Process.Pid, syscall.SIGCONT)
	if err := signalPod(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	for _, pid := range children {
		for deadline := time.Now().Add(5 * time.Second); running(pid); {
			if time.Now().After(deadline) {
				t.Fatalf("child %d outlived the kill of its parent", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
