package redistest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Sentinel timings: small so that failovers in tests take seconds, not the
// production defaults' half a minute.
const (
	sentinelQuorum          = 2
	sentinelDownAfterMillis = 1000
	sentinelFailoverMillis  = 3000
)

// clusterNodeTimeoutMillis is small for the same reason: a killed node is
// marked failing within seconds.
const clusterNodeTimeoutMillis = 2000

// commonConf is what every process gets: loopback only, its own directory
// and log file.
func commonConf(s *Server) []string {
	return []string{
		"bind 127.0.0.1",
		"port " + strconv.Itoa(s.port),
		// Loopback-only already; protected mode would refuse the
		// password-less servers' clients for nothing.
		"protected-mode no",
		"daemonize no",
		"dir " + quote(s.dataDir),
		"logfile " + quote(s.logPath()),
	}
}

// dataConf is the config of a redis-server: no persistence unless the test
// asks for it, password, DEBUG, then the topology's lines, then the test's
// own directives last so they win.
func dataConf(s *Server, cfg config, topology ...string) ([]string, error) {
	lines := append(commonConf(s),
		`save ""`,
		"appendonly no",
		// Diskless sync waits 5 s by default for more replicas to batch;
		// tests would pay that on every replica start.
		"repl-diskless-sync-delay 0",
	)
	if cfg.password != "" {
		lines = append(lines, "requirepass "+quote(cfg.password), "masterauth "+quote(cfg.password))
	}
	if cfg.debugCommand {
		lines = append(lines, "enable-debug-command local")
	}
	if cfg.tls {
		tlsLines, err := tlsConf(s)
		if err != nil {
			return nil, err
		}
		lines = append(lines, tlsLines...)
	}
	lines = append(lines, topology...)
	extra, err := extraConf(cfg.extra)
	if err != nil {
		return nil, err
	}
	return append(lines, extra...), nil
}

// replicaConf makes a server replicate master from its first start on.
func replicaConf(master *Server) []string {
	return []string{"replicaof 127.0.0.1 " + strconv.Itoa(master.port)}
}

// clusterConf enables cluster mode. nodes.conf lives outside the data
// directory so RestartEmpty keeps the node's identity and slots: it comes back
// as the same, now empty, member.
func clusterConf(s *Server) []string {
	return []string{
		"cluster-enabled yes",
		"cluster-config-file " + quote(s.home+"/nodes.conf"),
		"cluster-node-timeout " + strconv.Itoa(clusterNodeTimeoutMillis),
	}
}

// sentinelConf monitors master under name. Sentinel rewrites this file as it
// learns replicas, peers and failovers, which is what lets a restarted
// Sentinel resume with the current view.
func sentinelConf(s *Server, cfg config, name string, master *Server) []string {
	lines := append(commonConf(s),
		fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d", name, master.port, sentinelQuorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", name, sentinelDownAfterMillis),
		fmt.Sprintf("sentinel failover-timeout %s %d", name, sentinelFailoverMillis),
	)
	if cfg.password != "" {
		lines = append(lines, fmt.Sprintf("sentinel auth-pass %s %s", name, quote(cfg.password)))
	}
	return lines
}

// extraConf turns WithConfig's command-line form into config lines.
func extraConf(args []string) ([]string, error) {
	var lines []string
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "--"):
			lines = append(lines, a[2:])
		case len(lines) == 0:
			return nil, fmt.Errorf("redistest: WithConfig argument %d (%q) comes before any --directive", i, a)
		case a == "":
			lines[len(lines)-1] += ` ""`
		default:
			lines[len(lines)-1] += " " + a
		}
	}
	return lines, nil
}

// quote makes a value one redis.conf argument even if it has spaces.
func quote(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

func writeConf(path string, lines []string) error {
	return os.WriteFile(path, []byte("# written by redistest\n"+strings.Join(lines, "\n")+"\n"), 0o600)
}
