package docs_test

import (
	"regexp"
	"slices"
	"testing"
)

// TestConditionReasons: docs/operator.md's tables list every condition
// type and reason api/v1alpha1 defines, and no other.
func TestConditionReasons(t *testing.T) {
	src := read(t, "api/v1alpha1/conditions.go")
	var defined []string
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:Reason|Condition)\w+\s*=\s*"(\w+)"`).FindAllStringSubmatch(src, -1) {
		defined = append(defined, m[1])
	}
	if len(defined) < 30 {
		t.Fatalf("found %d condition types and reasons in api/v1alpha1/conditions.go: the pattern no longer matches", len(defined))
	}
	var documented []string
	for _, k := range tableKeys(read(t, "docs/operator.md")) {
		if regexp.MustCompile(`^[A-Z][A-Za-z]+$`).MatchString(k) {
			documented = append(documented, k)
		}
	}
	if m := missing(defined, func(s string) bool { return slices.Contains(documented, s) }); len(m) > 0 {
		t.Errorf("docs/operator.md does not document the conditions or reasons %v", m)
	}
	if m := missing(documented, func(s string) bool { return slices.Contains(defined, s) }); len(m) > 0 {
		t.Errorf("docs/operator.md documents conditions or reasons the code does not have: %v", m)
	}
}
