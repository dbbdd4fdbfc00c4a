package handler

import (
	"net"
	"sync"
)

// connSet holds the open connections of a migration proxy or server, to
// end together; once closed it takes no more.
type connSet struct {
	mu     sync.Mutex
	m      map[net.Conn]bool
	closed bool
}

// add holds c; false when the set is closed already (c is not held).
func (s *connSet) add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.m == nil {
		s.m = map[net.Conn]bool{}
	}
	s.m[c] = true
	return true
}

// remove lets c go.
func (s *connSet) remove(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, c)
}

// close takes no more connections and closes those held.
func (s *connSet) close() {
	s.mu.Lock()
	s.closed = true
	conns := make([]net.Conn, 0, len(s.m))
	for c := range s.m {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}
