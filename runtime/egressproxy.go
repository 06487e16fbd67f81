package runtime

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"airlock.dev/airlock/egress"
)

// EgressProxy is an egress proxy serving sandboxed commands on a unix
// socket in a directory of its own: the one egress policy (egress.Client)
// that web_fetch uses applies to their traffic too.
type EgressProxy struct {
	// Socket is the proxy's unix socket (mode 0600, in a 0700 directory).
	Socket string
	stop   context.CancelFunc
	dir    string
	done   chan struct{}
}

// StartEgressProxy serves c's policy on a new unix socket until Close.
func StartEgressProxy(c *egress.Client) (*EgressProxy, error) {
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
	p := &EgressProxy{Socket: sock, stop: stop, dir: dir, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		egress.NewProxy(c).Serve(ctx, l)
	}()
	return p, nil
}

// Close stops the proxy and removes its socket.
func (p *EgressProxy) Close() error {
	p.stop()
	<-p.done
	return os.RemoveAll(p.dir)
}
