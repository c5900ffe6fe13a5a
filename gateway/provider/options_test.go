package provider_test

import (
	"log/slog"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
)

// WithDefaults fills what each provider's New defaults, keeps what the
// caller set, and leaves the caller's Options unchanged.
func TestOptions_WithDefaults(t *testing.T) {
	if got := provider.WithDefaults(nil, "X_KEY"); got.MaxTokens != provider.DefaultMaxTokens || got.APIKeyEnv != "X_KEY" || got.Logger == nil {
		t.Errorf("provider.WithDefaults(nil) = MaxTokens %d, APIKeyEnv %q, Logger %v", got.MaxTokens, got.APIKeyEnv, got.Logger)
	}
	log := slog.New(slog.DiscardHandler)
	set := &provider.Options{MaxTokens: 100, APIKeyEnv: "MINE", Logger: log, Model: "m"}
	if got := provider.WithDefaults(set, "X_KEY"); got.MaxTokens != 100 || got.APIKeyEnv != "MINE" || got.Logger != log || got.Model != "m" {
		t.Errorf("provider.WithDefaults(set) = %+v, want the caller's values", got)
	}
	neg := &provider.Options{MaxTokens: -1}
	if got := provider.WithDefaults(neg, "X_KEY"); got.MaxTokens != provider.DefaultMaxTokens || neg.MaxTokens != -1 || neg.APIKeyEnv != "" || neg.Logger != nil {
		t.Errorf("provider.WithDefaults(-1) = %d, caller's now %+v: want the default and the caller's untouched", got.MaxTokens, neg)
	}
}
