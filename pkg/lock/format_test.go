package lock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlease/redlease/pkg/lock"
)

func TestDefaults(t *testing.T) {
	if got := lock.DefaultRenewInterval(30 * time.Second); got != 10*time.Second {
		t.Errorf("DefaultRenewInterval(30s) = %v, want 10s", got)
	}
}

func TestValidateKey(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"settlement", true},
		{"ns/name", true},
		{strings.Repeat("k", 512), true},
		{"", false},
		{strings.Repeat("k", 513), false},
		{"has space", false},
		{"tab\tkey", false},
		{"new\nline", false},
		{"orders{42}", true},
		{"a{b", true},
		{"a}b", false},
		{"a{}b}", false},
	}
	for _, tt := range tests {
		err := lock.ValidateKey(tt.key)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, lock.ErrInvalidConfig)) {
			t.Errorf("ValidateKey(%.20q) = %v, want ok=%v", tt.key, err, tt.ok)
		}
	}
}
