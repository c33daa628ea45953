/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// ListenUnix listens on a Unix socket at path with the file mode given
// (0o600: the agent's user only; 0o660 with the pod's fsGroup: every
// container of the pod). A socket left by an agent that died is replaced;
// any other file is not.
func ListenUnix(ctx context.Context, path string, mode fs.FileMode) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("agent socket %s: %w", path, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("agent socket %s: a file that is not a socket is in the way", path)
		}
		var d net.Dialer
		if c, err := d.DialContext(ctx, "unix", path); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("agent socket %s: another agent serves it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("agent socket %s: removing a dead agent's socket: %w", path, err)
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("agent socket %s: %w", path, err)
	}
	if err := os.Chmod(path, mode); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("agent socket %s: %w", path, err)
	}
	return ln, nil
}

// Serve serves s on every listener until ctx ends, then ends the streams,
// releases every lease and stops.
func Serve(ctx context.Context, s *Server, listeners ...net.Listener) error {
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true) // gRPC without TLS: the socket never leaves the pod
	srv := &http.Server{Handler: s.Handler(), Protocols: protocols, ReadHeaderTimeout: 10 * time.Second}
	errs := make(chan error, len(listeners))
	for _, ln := range listeners {
		go func() { errs <- srv.Serve(ln) }()
	}
	select {
	case <-ctx.Done():
	case err := <-errs:
		s.Close()
		_ = srv.Close()
		return err
	}
	// Streams end first (their leases released, their clients told), so
	// that Shutdown does not wait for clients that hold on.
	s.Close()
	stopCtx, cancel := context.WithTimeout(context.Background(), ReleaseTimeout)
	defer cancel()
	if err := srv.Shutdown(stopCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
