/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/redlease/redlease/api/v1alpha1"
)

// getColumns are the table's columns; Priority 1 shows with -o wide only.
var getColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name"},
	{Name: "Ready", Type: "string"},
	{Name: "Reason", Type: "string"},
	{Name: "Holder", Type: "string"},
	{Name: "Pod", Type: "string"},
	{Name: "Fence", Type: "string"},
	{Name: "Waiters", Type: "string"},
	{Name: "TTL", Type: "string"},
	{Name: "Age", Type: "string"},
	{Name: "Permits", Type: "string", Priority: 1},
	{Name: "Node", Type: "string", Priority: 1},
	{Name: "Store", Type: "string", Priority: 1},
	{Name: "Mode", Type: "string", Priority: 1},
	{Name: "Key", Type: "string", Priority: 1},
}

// table is rows as `kubectl get` shows them: Redis's columns ? for a lock
// that could not be read, so that none looks free.
func table(rows []*getRow, now time.Time) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: getColumns}
	for _, r := range rows {
		ready, reason := readyOf(r.dl)
		read := []any{"?", "?", "?", "?", "?", "?", "?"}
		permits := r.dl.Spec.PermitsOrDefault()
		if h := r.held; h != nil {
			read = []any{h.holders(permits), orDash(h.Pod), strconv.FormatUint(h.Fence, 10), h.Waiting.count(), orDash(h.TTL),
				fmt.Sprintf("%d/%d", h.held(permits), permits), orDash(h.Node)}
		}
		store := "inline"
		if ref := r.dl.Spec.StoreRef; ref != nil {
			store = string(ref.Kind) + "/" + ref.Name
		}
		mode := "-"
		if c := r.dl.Status.Connection; c != nil {
			mode = string(c.Mode)
		}
		cells := append([]any{r.dl.Name, ready, reason}, read[:5]...)
		cells = append(cells, duration.HumanDuration(now.Sub(r.dl.CreationTimestamp.Time)))
		cells = append(cells, read[5:]...)
		cells = append(cells, store, mode, orDash(r.dl.Status.Key))
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: r.dl}})
	}
	return t
}

// readyOf is the Ready condition's status and reason.
func readyOf(dl *v1alpha1.DistributedLock) (status, reason string) {
	c := apimeta.FindStatusCondition(dl.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil {
		return "Unknown", "-"
	}
	return string(c.Status), orDash(c.Reason)
}

// redisField is the field each object of -o json, yaml, jsonpath and
// custom-columns carries beside metadata, spec and status: what lockctl
// read from Redis (the columns of the table), or why it could not.
const redisField = "redis"

// getRedis is the redis field.
type getRedis struct {
	*holding
	Error string `json:"error,omitempty"`
}

// list is rows as a List of DistributedLocks as the API serves them, each
// with its redis field.
func list(rows []*getRow) (*unstructured.UnstructuredList, error) {
	l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
	for _, r := range rows {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(r.dl)
		if err != nil {
			return nil, err
		}
		u := unstructured.Unstructured{Object: obj}
		u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DistributedLock"))
		u.SetManagedFields(nil) // as kubectl prints objects
		g := getRedis{holding: r.held}
		if r.err != nil {
			g.Error = r.err.Error()
		}
		field, err := toMap(g)
		if err != nil {
			return nil, err
		}
		u.Object[redisField] = field
		l.Items = append(l.Items, u)
	}
	return l, nil
}

// toMap is v as JSON's generic value, as unstructured objects hold it:
// integers as int64 (a fence is too large for a float64's exact digits).
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, utiljson.Unmarshal(b, &m)
}

// getFormats are -o's values besides the table's (none) and custom-columns.
var getFormats = []string{"wide", "json", "yaml", "name", "jsonpath=TEMPLATE", "jsonpath-as-json=TEMPLATE", "custom-columns=HEADER:JSONPATH,..."}

// getOutput is -o: "" (the table), wide, custom-columns=SPEC, or one of
// cli-runtime's printers (json, yaml, name, jsonpath=...). Not
// go-template: executing a text/template makes the linker keep every
// exported method, 22 MB more of lockctl.
type getOutput struct {
	format    string
	noHeaders bool
	all       bool // -A: a NAMESPACE column
}

// table reports whether the output is the table (-o wide too).
func (o getOutput) table() bool { return o.format == "" || o.format == "wide" }

// check refuses an -o that names no printer, before anything is read.
func (o getOutput) check() error {
	if o.table() {
		return nil
	}
	_, err := o.printer()
	return err
}

// print writes rows as the output asks.
func (o getOutput) print(w io.Writer, rows []*getRow) error {
	if o.table() {
		p := printers.NewTablePrinter(printers.PrintOptions{NoHeaders: o.noHeaders, WithNamespace: o.all, Wide: o.format == "wide"})
		return p.PrintObj(table(rows, time.Now()), w)
	}
	p, err := o.printer()
	if err != nil {
		return err
	}
	l, err := list(rows)
	if err != nil {
		return err
	}
	return p.PrintObj(l, w)
}

// printer is the printer of the formats other than the table, as kubectl
// chooses it (missing keys allowed in templates, as kubectl's default); a
// usage error for another -o.
func (o getOutput) printer() (printers.ResourcePrinter, error) {
	p, err := o.choose()
	if err != nil {
		return nil, exit(ExitUsage, fmt.Errorf("-o %s: %w", o.format, err))
	}
	return p, nil
}

func (o getOutput) choose() (printers.ResourcePrinter, error) {
	name, arg, _ := strings.Cut(o.format, "=")
	switch name {
	case "json":
		return &printers.JSONPrinter{}, nil
	case "yaml":
		return &printers.YAMLPrinter{}, nil
	case "name":
		return &printers.NamePrinter{}, nil
	case "jsonpath", "jsonpath-as-json":
		p, err := printers.NewJSONPathPrinter(arg)
		if err != nil {
			return nil, err
		}
		p.AllowMissingKeys(true)
		p.EnableJSONOutput(name == "jsonpath-as-json")
		return p, nil
	case "custom-columns":
		return parseCustomColumns(arg, o.noHeaders)
	}
	return nil, fmt.Errorf("want one of %s", strings.Join(getFormats, ", "))
}
