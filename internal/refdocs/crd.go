// Package refdocs writes the reference pages under docs/reference from
// what the code and the generated CRDs say, so that they cannot drift:
// every CRD field with its type, bounds and description (CRDs), and every
// lockctl command with its flags (CLI). hack/refdocs writes them; make
// manifests runs it, and TestReferenceIsCurrent fails when a page is
// stale.
package refdocs

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// CRDs is the reference page of the CRDs in crdYAMLs (config/crd/bases).
func CRDs(crdYAMLs ...[]byte) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(generatedBy)
	b.WriteString("# API reference: redlease.io/v1alpha1\n\n")
	b.WriteString("Every field of the three kinds, from the CRDs the API server serves, with the\n")
	b.WriteString("rules it enforces (types, bounds, enums, defaults, and the cross-field rules\n")
	b.WriteString("it checks with CEL). What the controller does with them: [operator.md](../operator.md).\n")
	for _, y := range crdYAMLs {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(y, &crd); err != nil {
			return nil, fmt.Errorf("refdocs: %w", err)
		}
		writeCRD(&b, &crd)
	}
	return b.Bytes(), nil
}

// generatedBy heads every generated page.
const generatedBy = "<!-- Written by `make manifests` (hack/refdocs) from the code and the generated CRDs: do not edit. -->\n\n"

func writeCRD(b *bytes.Buffer, crd *apiextensionsv1.CustomResourceDefinition) {
	n := crd.Spec.Names
	for _, v := range crd.Spec.Versions {
		fmt.Fprintf(b, "\n## %s\n\n", n.Kind)
		fmt.Fprintf(b, "`%s/%s`, %s; `kubectl get %s`", crd.Spec.Group, v.Name, strings.ToLower(string(crd.Spec.Scope)), n.Plural)
		if len(n.ShortNames) > 0 {
			fmt.Fprintf(b, " (short: `%s`)", strings.Join(n.ShortNames, "`, `"))
		}
		b.WriteString(".\n")
		if s := v.Schema; s != nil && s.OpenAPIV3Schema != nil {
			root := s.OpenAPIV3Schema
			if root.Description != "" {
				fmt.Fprintf(b, "\n%s\n", oneLine(root.Description))
			}
			writeColumns(b, v.AdditionalPrinterColumns)
			for _, part := range []string{"spec", "status"} {
				p, ok := root.Properties[part]
				if !ok {
					continue
				}
				fmt.Fprintf(b, "\n### %s.%s\n\n", n.Kind, part)
				writeRules(b, part, p)
				b.WriteString("| Field | Type | Rules | Description |\n|---|---|---|---|\n")
				writeFields(b, part, p)
			}
		}
	}
}

// writeColumns lists what kubectl get shows.
func writeColumns(b *bytes.Buffer, cols []apiextensionsv1.CustomResourceColumnDefinition) {
	if len(cols) == 0 {
		return
	}
	b.WriteString("\n`kubectl get` columns (`-o wide` adds those marked wide):\n\n")
	for _, c := range cols {
		wide := ""
		if c.Priority > 0 {
			wide = " (wide)"
		}
		what := oneLine(c.Description)
		if what == "" {
			what = "`" + c.JSONPath + "`"
		}
		fmt.Fprintf(b, "- **%s**%s: %s\n", c.Name, wide, what)
	}
}

// writeRules lists the CEL rules of the object at path.
func writeRules(b *bytes.Buffer, path string, s apiextensionsv1.JSONSchemaProps) {
	seen := map[string]bool{} // one line for rules that say the same on several fields
	for _, r := range s.XValidations {
		msg := r.Message
		if msg == "" {
			msg = "`" + r.Rule + "`"
		}
		if seen[msg] {
			continue
		}
		seen[msg] = true
		fmt.Fprintf(b, "- Rule on `%s`: %s\n", path, cell(msg))
	}
	if len(s.XValidations) > 0 {
		b.WriteString("\n")
	}
}

// writeFields writes a row for each field under s, at path, depth first,
// fields in name order.
func writeFields(b *bytes.Buffer, path string, s apiextensionsv1.JSONSchemaProps) {
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := s.Properties[name]
		field := path + "." + name
		rules := rulesOf(p)
		if slices.Contains(s.Required, name) {
			rules = append([]string{"required"}, rules...)
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", field, typeOf(p), cell(strings.Join(rules, "; ")), cell(oneLine(p.Description)))
		for _, r := range p.XValidations {
			if r.Message != "" {
				fmt.Fprintf(b, "| | | rule: %s | |\n", cell(r.Message))
			}
		}
		switch {
		case p.Type == "object" && len(p.Properties) > 0:
			writeFields(b, field, p)
		case p.Type == "array" && p.Items != nil && p.Items.Schema != nil && len(p.Items.Schema.Properties) > 0:
			writeFields(b, field+"[]", *p.Items.Schema)
		}
	}
}

func typeOf(p apiextensionsv1.JSONSchemaProps) string {
	switch {
	case p.XIntOrString:
		return "int or string"
	case p.Type == "array" && p.Items != nil && p.Items.Schema != nil:
		return "[]" + typeOf(*p.Items.Schema)
	case p.Format != "":
		return p.Type + " (" + p.Format + ")"
	}
	return p.Type
}

// rulesOf are p's bounds, enum, pattern and default, as short phrases.
func rulesOf(p apiextensionsv1.JSONSchemaProps) []string {
	var r []string
	if len(p.Enum) > 0 {
		vals := make([]string, len(p.Enum))
		for i, e := range p.Enum {
			vals[i] = strings.Trim(string(e.Raw), `"`)
		}
		r = append(r, "one of "+strings.Join(vals, ", "))
	}
	if p.Minimum != nil {
		r = append(r, fmt.Sprintf("min %v", *p.Minimum))
	}
	if p.Maximum != nil {
		r = append(r, fmt.Sprintf("max %v", *p.Maximum))
	}
	if p.MinLength != nil {
		r = append(r, fmt.Sprintf("min length %d", *p.MinLength))
	}
	if p.MaxLength != nil {
		r = append(r, fmt.Sprintf("max length %d", *p.MaxLength))
	}
	if p.MaxItems != nil {
		r = append(r, fmt.Sprintf("at most %d items", *p.MaxItems))
	}
	if p.Pattern != "" {
		r = append(r, "pattern `"+p.Pattern+"`")
	}
	if p.Default != nil {
		r = append(r, "default `"+string(p.Default.Raw)+"`")
	}
	return r
}

// oneLine joins a description's lines: a table cell is one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cell makes s safe in a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// CRDFiles are the generated CRDs in config/crd/bases, in the order the
// reference lists them: the lock first, then the stores.
var CRDFiles = []string{
	"redlease.io_distributedlocks.yaml",
	"redlease.io_lockstores.yaml",
	"redlease.io_clusterlockstores.yaml",
}
