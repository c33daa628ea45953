package protocol_test

import (
	"flag"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
)

// functions runs this package's tests of the current protocol through the
// library's functions instead of scripts: make test runs the package both
// ways, so both ways pass the same protocol tests.
var functions = flag.Bool("protocol.functions", false, "call the library's functions (loaded first) instead of running scripts")

// runner is how the tests run the current protocol on c: scripts, or,
// with -protocol.functions, the library's functions, loaded now, as a user
// whose ACL refuses EVAL, EVALSHA, SCRIPT and FUNCTION, so that nothing
// falls back to scripts unseen.
func runner(t testing.TB, c *redis.Client) protocol.Runner {
	t.Helper()
	if !*functions {
		return protocol.Scripts(c)
	}
	ctx := t.Context()
	if err := protocol.LoadLibrary(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "acl", "setuser", "functions-only", "on", ">pw", "~*", "&*", "+@all", "-eval", "-evalsha", "-script", "-function").Err(); err != nil {
		t.Fatal(err)
	}
	opts := *c.Options()
	opts.Username, opts.Password = "functions-only", "pw"
	fc := redis.NewClient(&opts)
	t.Cleanup(func() { _ = fc.Close() })
	if err := fc.Eval(ctx, "return 1", nil).Err(); err == nil {
		t.Fatal("the functions-only user may EVAL")
	}
	return protocol.NewCaller(protocol.FunctionsAuto).On(fc)
}
