package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"airlock.dev/airlock/egress"
)

// egressProxy is an egress proxy serving sandboxed commands on a unix
// socket in a directory of its own: the one egress policy (egress.Client)
// that web_fetch uses applies to their traffic too.
type egressProxy struct {
	socket string
	stop   context.CancelFunc
	dir    string
	done   chan struct{}
}

// startEgressProxy serves c's policy on a new unix socket (mode 0600, in a
// 0700 directory) until Close.
func startEgressProxy(c *egress.Client) (*egressProxy, error) {
	dir, err := os.MkdirTemp("", "airlock-egress-")
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	sock := filepath.Join(dir, "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	os.Chmod(sock, 0o600)
	ctx, stop := context.WithCancel(context.Background())
	p := &egressProxy{socket: sock, stop: stop, dir: dir, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		egress.NewProxy(c).Serve(ctx, l)
	}()
	return p, nil
}

// Close stops the proxy and removes its socket.
func (p *egressProxy) Close() error {
	p.stop()
	<-p.done
	return os.RemoveAll(p.dir)
}
