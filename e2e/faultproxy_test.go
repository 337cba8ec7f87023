package e2e_test

import (
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// netFault is what a faultProxy does to the connections through it.
type netFault int32

const (
	netPass      netFault = iota // forwards both ways
	netReset                     // resets every connection: the open ones at once, new ones on accept
	netHang                      // accepts and never answers: what the client sends goes nowhere
	netSlow                      // forwards, each chunk toward the client late by the proxy's delay
	netMalformed                 // answers a request with bytes no protocol accepts, then closes
	netTruncated                 // answers an HTTP request with half its body, then closes
	netBigHeader                 // answers an HTTP request with headers over the client's limit
	netDown                      // the service behind is stopped (a restart): set by the test, not the proxy
)

func (f netFault) String() string {
	return [...]string{"pass", "reset", "hang", "slow", "malformed", "truncated", "big-header", "down"}[f]
}

// _bigHeader is over net/http's client's default limit on response
// headers (10 MiB, http.Transport.MaxResponseHeaderBytes), which yarpc's
// HTTP outbound and errown's Transport keep.
var _bigHeader = strings.Repeat("x", 11<<20)

// faultProxy is a TCP proxy on 127.0.0.1 in front of one service: the
// network between a caller and its callee, where faults are injected
// while calls are in flight and removed again. It counts the connections
// it accepted. Close stops it and waits for every goroutine it started.
type faultProxy struct {
	l       net.Listener
	backend string
	delay   time.Duration // of netSlow

	fault atomic.Int32
	// gen counts the changes of fault: a call that started and ended in
	// the same generation ran wholly under one fault.
	gen      atomic.Int64
	accepted atomic.Int64

	mu      sync.Mutex
	conns   map[*proxyConn]struct{}
	waiting map[net.Conn]struct{} // new connections whose first request is awaited
	closed  bool
	wg      sync.WaitGroup
}

type proxyConn struct {
	client, server net.Conn
	// tainted is set once a fault touched the connection: its byte
	// stream is no longer what either end sent, and it is reset when the
	// fault ends, as a real network's keepalive would in time.
	tainted atomic.Bool
	once    sync.Once
}

// newFaultProxy listens on 127.0.0.1 and forwards to backend.
func newFaultProxy(backend string, delay time.Duration) (*faultProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &faultProxy{l: l, backend: backend, delay: delay, conns: make(map[*proxyConn]struct{}), waiting: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is where callers reach the service through the proxy.
func (p *faultProxy) Addr() string { return p.l.Addr().String() }

// Fault returns the fault in force and its generation.
func (p *faultProxy) Fault() (netFault, int64) {
	for {
		g := p.gen.Load()
		f := netFault(p.fault.Load())
		if p.gen.Load() == g {
			return f, g
		}
	}
}

// Set puts f in force. Setting netReset resets the open connections;
// going back to netPass (or netSlow) resets those a fault had touched.
func (p *faultProxy) Set(f netFault) {
	p.mu.Lock()
	p.fault.Store(int32(f))
	p.gen.Add(1)
	var drop []*proxyConn
	for c := range p.conns {
		if f == netReset || ((f == netPass || f == netSlow) && c.tainted.Load()) {
			drop = append(drop, c)
		}
	}
	p.mu.Unlock()
	for _, c := range drop {
		c.reset()
	}
}

// Close stops accepting, resets every connection and waits for the
// proxy's goroutines.
func (p *faultProxy) Close() {
	p.mu.Lock()
	p.closed = true
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	for c := range p.waiting {
		resetConn(c)
	}
	p.mu.Unlock()
	_ = p.l.Close()
	for _, c := range conns {
		c.reset()
	}
	p.wg.Wait()
}

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		conn, err := p.l.Accept()
		if err != nil {
			return // closed
		}
		p.accepted.Add(1)
		p.wg.Add(1)
		go p.serve(conn)
	}
}

// serve handles one accepted connection under the fault in force.
func (p *faultProxy) serve(client net.Conn) {
	defer p.wg.Done()
	var first []byte // what the client sent before the proxy dialed
	switch f, _ := p.Fault(); f {
	case netReset:
		resetConn(client)
		return
	case netMalformed, netTruncated, netBigHeader:
		// The garbage answers the connection's first request, if it comes
		// while the fault is in force. A client may dial under the fault
		// and send its first request on the connection later, once the
		// fault has ended (net/http keeps a connection it dialed for a
		// request another connection served): that one is forwarded.
		var ok bool
		if first, ok = p.readFirst(client); !ok {
			_ = client.Close()
			return
		}
		if f, _ = p.Fault(); isGarbage(f) {
			p.garbage(client, f)
			return
		}
	}
	server, err := net.DialTimeout("tcp", p.backend, time.Second)
	if err != nil { // the service is down: the client sees a reset
		resetConn(client)
		return
	}
	if _, err := server.Write(first); err != nil {
		resetConn(client)
		resetConn(server)
		return
	}
	c := &proxyConn{client: client, server: server}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.reset()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.pump(c, c.server, c.client, false); done <- struct{}{} }()
	p.pump(c, c.client, c.server, true)
	<-done
	c.reset()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// pump copies from src to dst under the fault in force, chunk by chunk,
// until either end closes. toClient is the direction of the answers; under
// netSlow each of its chunks is delivered the proxy's delay after it was
// read, through a delay line, so that the link has latency without losing
// throughput.
func (p *faultProxy) pump(c *proxyConn, dst, src net.Conn, toClient bool) {
	defer c.reset()
	type chunk struct {
		at time.Time
		b  []byte
	}
	var line chan chunk
	if toClient {
		line = make(chan chunk, 64)
		defer close(line)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for ch := range line {
				time.Sleep(time.Until(ch.at))
				if _, err := dst.Write(ch.b); err != nil {
					c.reset()
				}
			}
		}()
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			at := time.Now()
			switch f, _ := p.Fault(); f {
			case netReset:
				// A connection Set's sweep missed (serve dialed it before
				// the fault and registered it after the sweep) is reset
				// by the first bytes it carries under the fault.
				return
			case netHang:
				c.tainted.Store(true)
				continue // swallowed: nothing reaches the other end
			case netMalformed, netTruncated, netBigHeader:
				// An open connection (gRPC's, TChannel's) meets the fault
				// mid-stream: the client gets noise instead of an answer.
				c.tainted.Store(true)
				if toClient {
					line <- chunk{at: at, b: []byte("\x00\xff garbage \xff\x00")}
					return
				}
				continue
			case netSlow:
				at = at.Add(p.delay)
			}
			if toClient {
				line <- chunk{at: at, b: append([]byte(nil), buf[:n]...)}
			} else if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func isGarbage(f netFault) bool {
	return f == netMalformed || f == netTruncated || f == netBigHeader
}

// readFirst reads what a new connection's client sends first, waiting
// for it at most 30s or until Close.
func (p *faultProxy) readFirst(client net.Conn) ([]byte, bool) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, false
	}
	p.waiting[client] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.waiting, client)
		p.mu.Unlock()
	}()
	_ = client.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 4<<10)
	n, err := client.Read(buf)
	_ = client.SetReadDeadline(time.Time{})
	return buf[:n], err == nil
}

// garbage answers a new connection's first request, already read, with
// the fault's answer and closes it: the service behind is never reached.
func (p *faultProxy) garbage(client net.Conn, f netFault) {
	defer func() { _ = client.Close() }()
	_ = client.SetDeadline(time.Now().Add(5 * time.Second))
	var answer string
	if f == netBigHeader {
		// Written in parts: no 11 MiB string per connection.
		_, _ = io.WriteString(client, "HTTP/1.1 200 OK\r\nRpc-Encoding: raw\r\nX-Big: ")
		_, _ = io.WriteString(client, _bigHeader)
	}
	switch f {
	case netMalformed:
		answer = "\x00\xffnot a response of any protocol\xff\x00\r\n\r\n"
	case netTruncated:
		// Rpc-Encoding and Content-Length as yarpc's inbound writes them;
		// half the body arrives.
		answer = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nRpc-Encoding: raw\r\nContent-Length: 16\r\n\r\n12345678"
	case netBigHeader:
		answer = "\r\nContent-Length: 8\r\n\r\n12345678"
	}
	_, _ = io.WriteString(client, answer)
	// Let the client read it all before the close: a reset would throw
	// away what it has not read yet.
	if tc, ok := client.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, client) // until the client hangs up or the deadline
}

// reset closes both ends of c with a TCP reset, once.
func (c *proxyConn) reset() {
	c.once.Do(func() {
		resetConn(c.client)
		resetConn(c.server)
	})
}

// resetConn closes conn with a reset (SO_LINGER 0), not a FIN.
func resetConn(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
