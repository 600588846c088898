package interpose

import (
	"fmt"
	"net"
	"sync"
)

// connListener numbers the connections it accepts and gives each a remote
// address of its own ("conn-N"; a unix socket's peers have none), which
// gRPC reports as the call's peer, so that a fault can close the caller's
// connection.
type connListener struct {
	net.Listener
	mu    sync.Mutex
	next  int
	conns map[string]net.Conn
}

func newConnListener(l net.Listener) *connListener {
	return &connListener{Listener: l, conns: map[string]net.Conn{}}
}

func (l *connListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	tc := &trackedConn{Conn: c, addr: connAddr(fmt.Sprintf("conn-%d", l.next)), l: l}
	l.conns[tc.addr.String()] = tc
	return tc, nil
}

// drop closes the connection with the remote address addr and says
// whether there was one.
func (l *connListener) drop(addr string) bool {
	l.mu.Lock()
	c, ok := l.conns[addr]
	l.mu.Unlock()
	if ok {
		_ = c.Close()
	}
	return ok
}

type trackedConn struct {
	net.Conn
	addr connAddr
	l    *connListener
	once sync.Once
}

func (c *trackedConn) RemoteAddr() net.Addr { return c.addr }

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c.addr.String())
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

type connAddr string

func (a connAddr) Network() string { return "unix" }
func (a connAddr) String() string  { return string(a) }
