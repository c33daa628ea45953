package redistest

// Option configures servers started by the Start* functions.
type Option func(*config)

type config struct {
	password        string
	debugCommand    bool
	extra           []string
	clusterReplicas int
	tls             bool
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithPassword sets requirepass on every data server, masterauth so replicas
// can sync, and "sentinel auth-pass" so Sentinels can monitor. Sentinels
// themselves take no password. Clients from Server.Client and Cluster.Client
// send it.
func WithPassword(p string) Option {
	return func(c *config) { c.password = p }
}

// WithDebugCommand enables DEBUG from loopback ("enable-debug-command local"),
// e.g. for DEBUG SLEEP to stall a server from inside.
func WithDebugCommand() Option {
	return func(c *config) { c.debugCommand = true }
}

// WithConfig adds redis-server directives, written in command-line form:
// WithConfig("--maxmemory-policy", "allkeys-lru"). Each "--name" starts a line
// of the server's config file and the arguments after it follow verbatim, as
// in redis.conf: quote them yourself when needed; "\"\"" or "" is an empty
// string, so WithConfig("--rename-command", "CONFIG", "\"\"") disables CONFIG.
// They come after the harness's own directives and so override them (e.g.
// "--appendonly", "yes"). They apply to data servers, not to Sentinels.
// Calls accumulate.
func WithConfig(args ...string) Option {
	return func(c *config) { c.extra = append(c.extra, args...) }
}

// AdminCommands are the commands WithAdminForbidden renames away: those
// managed services (ElastiCache, Memorystore, Azure Cache, Redis Cloud)
// rename, disable or deny to their customers.
var AdminCommands = []string{"CONFIG", "ACL", "DEBUG", "MONITOR"}

// WithAdminForbidden starts data servers as a managed service runs them:
// AdminCommands renamed to "" (rename-command NAME ""), so they answer
// "ERR unknown command". Sentinels keep them. It is WithConfig with
// those directives, and so comes after WithDebugCommand, which it undoes.
func WithAdminForbidden() Option {
	return func(c *config) {
		for _, cmd := range AdminCommands {
			c.extra = append(c.extra, "--rename-command", cmd, `""`)
		}
	}
}

// WithClusterReplicas gives every master of StartCluster n replicas
// (redis-cli --cluster-replicas n). Other topologies ignore it.
func WithClusterReplicas(n int) Option {
	return func(c *config) { c.clusterReplicas = n }
}
