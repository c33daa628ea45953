/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisacl_test

import (
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/redlease/redlease/internal/redisacl"
)

// redisCall finds the command a Lua script runs: redis.call('GET', ...)
// or redis.pcall('HGET', ...).
var redisCall = regexp.MustCompile(`redis\.p?call\('([A-Za-z]+)'`)

// TestControllerRulesCoverItsScripts: every command run by a script the
// controller runs (the read, raise-fence and epoch-record scripts, and the
// epoch check the last one includes) is allowed by the controller's rules
// in every mode. Redis checks a script's commands against the caller's
// ACL; one missing fails the script, or under redis.pcall (read.lua's
// quarantine) reads as nothing, silently.
func TestControllerRulesCoverItsScripts(t *testing.T) {
	allowed := map[string]bool{}
	for _, r := range redisacl.ControllerRules(redisacl.ControllerModes{}) {
		if cmd, ok := strings.CutPrefix(r, "+"); ok {
			allowed[cmd] = true
		}
	}
	lua := os.DirFS("../protocol/lua")
	for _, script := range []string{"read.lua", "raise_fence.lua", "epoch_read.lua", "epoch.lua"} {
		src, err := fs.ReadFile(lua, script)
		if err != nil {
			t.Fatal(err)
		}
		calls := redisCall.FindAllStringSubmatch(string(src), -1)
		if len(calls) == 0 {
			t.Errorf("%s: no redis.call found", script)
		}
		for _, m := range calls {
			if cmd := strings.ToLower(m[1]); !allowed[cmd] {
				t.Errorf("%s runs %s, which the controller's rules do not allow", script, m[1])
			}
		}
	}
}
