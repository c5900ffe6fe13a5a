package session

import (
	"strings"
	"testing"
)

func TestNewID(t *testing.T) {
	a, b := NewID(), NewID()
	if a == b || !strings.HasPrefix(a, "sess_") || len(a) != len("sess_")+26 {
		t.Errorf("NewID = %q, %q", a, b)
	}
}

func TestKey(t *testing.T) {
	tests := []struct {
		meta map[string]any
		want string
	}{
		{nil, "acp:s1"},
		{map[string]any{"sessionKey": "team:42"}, "team:42"},
		{map[string]any{"sessionKey": "  "}, "acp:s1"},
		{map[string]any{"sessionKey": 7}, "acp:s1"},
	}
	for _, tt := range tests {
		if got := Key("s1", tt.meta); got != tt.want {
			t.Errorf("Key(s1, %v) = %q, want %q", tt.meta, got, tt.want)
		}
	}
}
