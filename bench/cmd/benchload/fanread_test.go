package main

import (
	"net"
	"strings"
	"testing"
	"time"
)

// pairs returns n connected loopback TCP pairs: the client ends and the
// server ends.
func pairs(t *testing.T, n int) (clients, servers []net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		clients, servers = append(clients, c), append(servers, s)
		t.Cleanup(func() { s.Close() })
	}
	return clients, servers
}

// TestFanReader: the reader returns once every stream has read the marker,
// also when it comes split over writes and after other bytes, round after
// round; a stream that never gets it, or ends, fails the round.
func TestFanReader(t *testing.T) {
	marker := []byte("notifications/tools/list_changed")
	clients, servers := pairs(t, 40)
	fr, err := newFanReader(clients)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.close()
	send := func(skip int) {
		for i, s := range servers {
			if i == skip {
				continue
			}
			switch i % 3 {
			case 0:
				_, _ = s.Write([]byte(": keep-alive\n\ndata: {\"method\":\"" + string(marker) + "\"}\n\n"))
			case 1: // split inside the marker
				_, _ = s.Write([]byte("data: {\"method\":\"notifications/to"))
				time.Sleep(time.Millisecond)
				_, _ = s.Write([]byte("ols/list_changed\"}\n\n"))
			case 2: // a large write first
				_, _ = s.Write([]byte(strings.Repeat("x", 10000) + string(marker)))
			}
		}
	}
	for round := range 3 {
		go send(-1)
		if err := fr.await(marker, time.Now().Add(10*time.Second)); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	go send(7)
	if err := fr.await(marker, time.Now().Add(200*time.Millisecond)); err == nil || !strings.Contains(err.Error(), "1 of 40 streams") {
		t.Fatalf("with stream 7 left out: %v, want 1 of 40 streams missing", err)
	}
	_, _ = servers[7].Write(marker) // the late one, so that the next round starts even
	servers[3].Close()
	if err := fr.await(marker, time.Now().Add(10*time.Second)); err == nil || !strings.Contains(err.Error(), "stream 3") {
		t.Fatalf("with stream 3 closed: %v, want stream 3's end reported", err)
	}
}
