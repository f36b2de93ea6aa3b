package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowestPort is the lowest port stablePort picks: below it are well-known services'.
const lowestPort = 10000

// stablePort is a free loopback port outside the kernel's ephemeral range, for a process
// the run stops and starts again on the same port (a replica, PostgreSQL). While such a
// process is down its port is free, and the kernel hands free ports of its ephemeral range
// to whoever asks for any port (port 0): a test server beside the run once took a drained
// replica's port that way, and answered the run's clients in the replica's place. A port
// below that range is handed out only to a program that names it.
func stablePort() (int, error) {
	high := ephemeralLow() // the first port the kernel may hand out
	if high-lowestPort < 1000 {
		return freePort() // no room below the range on this machine: take any free port
	}
	for attempt := 0; attempt < 200; attempt++ {
		port := lowestPort + rand.IntN(high-lowestPort)
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port in %d-%d after 200 tries", lowestPort, high-1)
}

// ephemeralLow is the low end of the kernel's ephemeral port range (Linux's default when
// it cannot be read).
func ephemeralLow() int {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if fields := strings.Fields(string(b)); len(fields) == 2 {
			if low, err := strconv.Atoi(fields[0]); err == nil {
				return low
			}
		}
	}
	return 32768
}
