package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/acp"
)

// TestParseConfig_MaxMediaBytesBound: a limits.maxMediaBytes so large that a
// prompt with such an image could not fit in one ACP message is refused at
// startup, naming the key and the bound.
func TestParseConfig_MaxMediaBytesBound(t *testing.T) {
	ok := fmt.Sprintf(`{"limits": {"maxMediaBytes": %d}}`, acp.MaxPromptMediaBytes)
	if err := parseConfig([]byte(ok), &Config{}); err != nil {
		t.Errorf("maxMediaBytes at the bound: %v", err)
	}
	for _, m := range []int{acp.MaxPromptMediaBytes + 1, 10 << 20, 100 << 20} {
		err := parseConfig(fmt.Appendf(nil, `{"limits": {"maxMediaBytes": %d}}`, m), &Config{})
		want := fmt.Sprintf(`key "limits.maxMediaBytes": %d bytes is over the bound of %d bytes`, m, acp.MaxPromptMediaBytes)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("maxMediaBytes %d: %v, want %q", m, err, want)
		}
	}
}
