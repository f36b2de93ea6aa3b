package main

import (
	"fmt"
	"net"
	"testing"
)

func TestStablePortIsFreeAndBelowTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	for i := 0; i < 20; i++ {
		port, err := stablePort()
		if err != nil {
			t.Fatal(err)
		}
		if low-lowestPort >= 1000 && (port < lowestPort || port >= low) {
			t.Fatalf("port %d is not in %d-%d, below the ephemeral range", port, lowestPort, low-1)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("port %d is not free: %v", port, err)
		}
		l.Close()
	}
}

func TestEphemeralLowReadsTheKernelsRange(t *testing.T) {
	if low := ephemeralLow(); low < 1024 || low > 65535 {
		t.Fatalf("ephemeral range starts at %d", low)
	}
}
