package redistest

import "testing"

// StartStandalone starts one redis-server.
func StartStandalone(t testing.TB, opts ...Option) *Server {
	t.Helper()
	RequireBinaries(t)
	return startData(t, newConfig(opts), false)
}

// StartNodes starts n independent redis-servers: no replication between
// them, as Redlock requires of its nodes.
func StartNodes(t testing.TB, n int, opts ...Option) []*Server {
	t.Helper()
	RequireBinaries(t)
	cfg := newConfig(opts)
	nodes := make([]*Server, n)
	for i := range nodes {
		nodes[i] = startData(t, cfg, false)
	}
	return nodes
}

// startData starts a redis-server with cfg; topology adds its directives
// once the port is known.
func startData(t testing.TB, cfg config, bus bool, topology ...func(*Server) []string) *Server {
	t.Helper()
	return launch(t, "redis-server", cfg.password, bus, func(s *Server) ([]string, error) {
		var lines []string
		for _, f := range topology {
			lines = append(lines, f(s)...)
		}
		return dataConf(s, cfg, lines...)
	})
}
