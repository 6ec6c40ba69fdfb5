package chaos

import (
	"io"
	"net"
	"sync"
)

// cutProxy forwards TCP to the simulator until cut: then it closes every
// open connection and refuses new ones (its port stops listening), as a
// network partition between the operator and every JobManager would.
type cutProxy struct {
	target string
	port   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

func newCutProxy(target string) (*cutProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	p := &cutProxy{target: target, port: port, conns: map[net.Conn]bool{}}
	p.serve(ln)
	return p, nil
}

func (p *cutProxy) addr() string { return "127.0.0.1:" + p.port }

func (p *cutProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *cutProxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil {
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// cut closes the listener and every connection.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

// heal listens on the same port again.
func (p *cutProxy) heal() error {
	ln, err := net.Listen("tcp", p.addr())
	if err != nil {
		return err
	}
	p.serve(ln)
	return nil
}

func (p *cutProxy) close() { p.cut() }
