/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"
)

// customColumns is kubectl's -o custom-columns=HEADER:JSONPATH,...: the
// printer lives in k8s.io/kubectl, whose command packages are far heavier
// than this, so it is redone here on client-go's jsonpath, with kubectl's
// syntax (a path with or without braces, "<none>" for a missing value).
type customColumns struct {
	noHeaders bool
	headers   []string
	paths     []*jsonpath.JSONPath
}

func parseCustomColumns(spec string, noHeaders bool) (*customColumns, error) {
	cc := &customColumns{noHeaders: noHeaders}
	for col := range strings.SplitSeq(spec, ",") {
		header, path, ok := strings.Cut(col, ":")
		if !ok || header == "" || path == "" {
			return nil, fmt.Errorf("-o custom-columns: %q: want HEADER:JSONPATH", col)
		}
		if !strings.HasPrefix(path, "{") {
			path = "{" + path + "}"
		}
		jp := jsonpath.New(header).AllowMissingKeys(true)
		if err := jp.Parse(path); err != nil {
			return nil, fmt.Errorf("-o custom-columns: %s: %w", header, err)
		}
		cc.headers, cc.paths = append(cc.headers, header), append(cc.paths, jp)
	}
	return cc, nil
}

// PrintObj writes one line per item of the List obj (printers.ResourcePrinter).
func (cc *customColumns) PrintObj(obj runtime.Object, w io.Writer) error {
	l, ok := obj.(*unstructured.UnstructuredList)
	if !ok {
		return fmt.Errorf("-o custom-columns prints lists, not %T", obj)
	}
	tw := tabwriter.NewWriter(w, 5, 8, 3, ' ', 0)
	if !cc.noHeaders {
		printf(tw, "%s\n", strings.Join(cc.headers, "\t"))
	}
	for _, item := range l.Items {
		cells := make([]string, len(cc.paths))
		for i, jp := range cc.paths {
			results, err := jp.FindResults(item.Object)
			if err != nil {
				return err
			}
			var vals []string
			for _, r := range results {
				for _, v := range r {
					var b bytes.Buffer
					if err := jp.PrintResults(&b, []reflect.Value{v}); err != nil {
						return err
					}
					vals = append(vals, b.String())
				}
			}
			cells[i] = strings.Join(vals, ",")
			if cells[i] == "" {
				cells[i] = "<none>"
			}
		}
		printf(tw, "%s\n", strings.Join(cells, "\t"))
	}
	return tw.Flush()
}
