package main

import (
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway/provider/openai"
)

// model.api picks OpenAI's wire API, else the base URL does; model.images
// is read into the options.
func TestModels_OpenAIAPI(t *testing.T) {
	no := false
	for _, tt := range []struct {
		mc   ModelConfig
		env  map[string]string
		want string
	}{
		{ModelConfig{Provider: "openai", Name: "gpt-4.1"}, nil, openai.APIResponses},
		{ModelConfig{Provider: "openai", Name: "llama3.1"}, map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}, openai.APIChat},
		{ModelConfig{Provider: "openai", Name: "gpt-fake", API: "responses", Images: &no}, map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, openai.APIResponses},
		{ModelConfig{Provider: "openai", Name: "gpt-4.1", API: "chat"}, nil, openai.APIChat},
	} {
		m, err := buildModel(tt.mc, func(k string) string { return tt.env[k] }, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Provider.(*openai.Provider).API(); got != tt.want {
			t.Errorf("%+v: API %s, want %s", tt.mc, got, tt.want)
		}
	}
}
