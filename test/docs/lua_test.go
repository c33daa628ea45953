package docs_test

import (
	"context"
	"fmt"
	"time"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// health is what an Argo CD health script returns.
type health struct{ status, message string }

// runHealth runs an Argo CD health script on a manifest the way Argo CD
// runs an argocd-cm customization (util/lua/lua.go): the object decoded
// as Kubernetes decodes it (integers are int64) and handed over as the
// global obj; only the package, base and table libraries open (Argo CD
// adds a reduced os, which the scripts do not use), so a script that
// calls string.* fails here as it would there; one second to run.
func runHealth(script, manifest string) (health, error) {
	data, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		return health{}, err
	}
	var obj unstructured.Unstructured
	if err := obj.UnmarshalJSON(data); err != nil {
		return health{}, err
	}
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{lua.LoadLibName: lua.OpenPackage, lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(open), Protect: true}, lua.LString(name)); err != nil {
			return health{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", luaValue(l, obj.Object))
	if err := l.DoString(script); err != nil {
		return health{}, err
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return health{}, fmt.Errorf("the script returned %s, want a table", l.Get(-1).Type())
	}
	var h health
	for field, dst := range map[string]*string{"status": &h.status, "message": &h.message} {
		switch v := ret.RawGetString(field).(type) {
		case lua.LString:
			*dst = string(v)
		case *lua.LNilType:
		default:
			return health{}, fmt.Errorf("%s is a %s, want a string", field, v.Type())
		}
	}
	return h, nil
}

// luaValue converts a decoded Kubernetes object to Lua as Argo CD's
// decodeValue does: maps to tables, lists to arrays (from index 1),
// numbers to numbers.
func luaValue(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(luaValue(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetString(k, luaValue(l, item))
		}
		return t
	}
	return lua.LNil
}
