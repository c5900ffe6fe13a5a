package metrics

import (
	"sync"
	"unicode/utf8"
)

// The caps on distinct label values: beyond them a new value is recorded
// as Other.
const (
	// MaxModels bounds the distinct gen_ai_request_model values.
	MaxModels = 32
	// MaxServers bounds the distinct mcp_server values.
	MaxServers = 64
	// MaxTools bounds the distinct gen_ai_tool_name values (over every
	// server).
	MaxTools = 256
	// Other is the label value of everything over a cap, and of a value
	// longer than maxLabelLen or not valid UTF-8.
	Other = "other"
	// maxLabelLen bounds the bytes of one label value.
	maxLabelLen = 128
)

// bounded admits up to max distinct values of a label; values beyond it
// become Other. Safe for concurrent use.
type bounded struct {
	max int

	mu   sync.Mutex
	seen map[string]bool // guarded by mu; at most max entries
}

func newBounded(max int) *bounded { return &bounded{max: max, seen: map[string]bool{}} }

// value returns v when it is admitted (seen before, or under the cap),
// else Other.
func (b *bounded) value(v string) string {
	if len(v) > maxLabelLen || !utf8.ValidString(v) {
		return Other
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen[v] {
		return v
	}
	if len(b.seen) >= b.max {
		return Other
	}
	b.seen[v] = true
	return v
}
