// Package freeport hands out TCP ports for the development servers a test or
// `encore dev` starts as separate processes.
//
// Asking the kernel for port 0 and closing the listener is not enough when
// another process binds the port later: the kernel hands the same ephemeral
// range to every outgoing connection, so between the close and the child's
// bind a client socket (a PostgreSQL connection, a gRPC dial) may take it,
// and the child fails with "address already in use". CI saw exactly that.
// The ports here come from below the ephemeral range, where the kernel never
// picks on its own, chosen at random, checked free by listening on them, and
// reserved across processes: each process that hands a port out holds a lock
// on a file named for it until it ends, so two parallel test processes never
// hand out the same port (a full test run saw one test binary's embedded
// Temporal server lose its port to another package's process, and exit).
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// lowest is the bottom of the range handed out: clear of the well-known
// ports and of the fixed ones Encore's own servers default to below it.
const lowest = 20000

var (
	mu        sync.Mutex
	handedOut = map[int]bool{} // never the same port twice in one process
)

// Take returns n distinct ports free on host at the moment of the call,
// outside the kernel's ephemeral range.
func Take(host string, n int) ([]int, error) { return take(host, n, 0) }

// TakeSpaced returns n distinct ports p such that p+offset is free too, both
// below the ephemeral range and reserved as Take's are: a Redis Cluster node
// listens on p and on its cluster bus at p+10000, and a bus port picked in
// the ephemeral range could be taken by any outgoing connection (CI saw a
// node abort on "address already in use").
func TakeSpaced(host string, n, offset int) ([]int, error) {
	if offset <= 0 {
		return nil, fmt.Errorf("freeport: offset %d: want a positive one", offset)
	}
	return take(host, n, offset)
}

func take(host string, n, offset int) ([]int, error) {
	if host == "" {
		host = "127.0.0.1"
	}
	top := EphemeralLow() - offset
	if top-lowest < 100 {
		return nil, fmt.Errorf("freeport: the ephemeral range starts at %d: no room below it for ports %d apart", top+offset, offset)
	}
	mu.Lock()
	defer mu.Unlock()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	out := make([]int, 0, n)
	for tries := 0; len(out) < n; tries++ {
		if tries > 2000 {
			return nil, errors.New("freeport: no free port found below the ephemeral range")
		}
		p := lowest + rand.IntN(top-lowest)
		group := []int{p}
		if offset > 0 {
			group = append(group, p+offset)
		}
		ls, ok := claim(host, group)
		if !ok {
			continue
		}
		held = append(held, ls...) // held until all are chosen so they differ
		for _, q := range group {
			handedOut[q] = true
		}
		out = append(out, p)
	}
	return out, nil
}

// claim reserves every port of group and listens on each, or on none: a
// port handed out before, reserved by another process or taken spoils the
// group.
func claim(host string, group []int) ([]net.Listener, bool) {
	var ls []net.Listener
	for _, q := range group {
		if handedOut[q] || !reserve(q) {
			break
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(q)))
		if err != nil {
			break // taken: try another
		}
		ls = append(ls, l)
	}
	if len(ls) == len(group) {
		return ls, true
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return nil, false
}

// EphemeralLow is the first port of the kernel's ephemeral range (Linux's
// default 32768 where the file cannot be read).
func EphemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 32768
	}
	p, err := strconv.Atoi(f[0])
	if err != nil || p <= 0 {
		return 32768
	}
	return p
}
