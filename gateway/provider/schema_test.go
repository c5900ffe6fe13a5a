package provider_test

import (
	"encoding/json"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/anthropic"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/openai"
)

func TestNormalizeSchema(t *testing.T) {
	tests := []struct {
		name string
		caps provider.Capabilities
		in   string
		want string
	}{
		{"empty", anthropic.Capabilities, ``, `{"properties":{},"type":"object"}`},
		{"null", anthropic.Capabilities, `null`, `{"properties":{},"type":"object"}`},
		{"no properties", openai.Capabilities, `{"type":"object"}`, `{"properties":{},"type":"object"}`},
		{"no type", openai.Capabilities, `{"properties":{"a":{"type":"string"}}}`, `{"properties":{"a":{"type":"string"}},"type":"object"}`},
		{"$schema stripped", anthropic.Capabilities, `{"$schema":"http://json-schema.org/draft-07/schema#","$id":"x","type":"object","properties":{},"required":["a"]}`, `{"properties":{},"required":["a"],"type":"object"}`},
		{"root string falls back", openai.Capabilities, `{"type":"string"}`, `{"properties":{},"type":"object"}`},
		{"root anyOf falls back", anthropic.Capabilities, `{"anyOf":[{"type":"object"},{"type":"null"}]}`, `{"properties":{},"type":"object"}`},
		{"type list falls back", openai.Capabilities, `{"type":["object","null"]}`, `{"properties":{},"type":"object"}`},
		{"not an object", openai.Capabilities, `[1,2]`, `{"properties":{},"type":"object"}`},
		{"openai drops a bad required", openai.Capabilities, `{"type":"object","properties":{},"required":true}`, `{"properties":{},"type":"object"}`},
		{"nested kept", anthropic.Capabilities, `{"type":"object","properties":{"o":{"type":"object","additionalProperties":false}},"additionalProperties":false}`, `{"additionalProperties":false,"properties":{"o":{"additionalProperties":false,"type":"object"}},"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := json.Marshal(provider.NormalizeSchema(tt.caps, "tool", json.RawMessage(tt.in), nil))
			if string(got) != tt.want {
				t.Errorf("NormalizeSchema(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestDegradeResult(t *testing.T) {
	res := &gateway.Result{Content: []gateway.Content{
		gateway.TextContent("hello"),
		{Type: gateway.ContentImage, Data: []byte("png"), MIMEType: "image/png"},
		{Type: gateway.ContentImage, Data: []byte("bmp"), MIMEType: "image/bmp"},
		{Type: gateway.ContentAudio, Data: []byte("wav!"), MIMEType: "audio/wav"},
		{Type: gateway.ContentResource, Resource: &gateway.EmbeddedResource{URI: "file:///a.txt", Text: "file text"}},
		{Type: gateway.ContentResource, Resource: &gateway.EmbeddedResource{URI: "file:///b.bin", MIMEType: "application/zip", Blob: []byte{1, 2}}},
		{Type: gateway.ContentResourceLink, URI: "file:///r.pdf", Name: "r.pdf", MIMEType: "application/pdf"},
	}}
	a := provider.DegradeResult(anthropic.Capabilities, res)
	if len(a) != 7 || a[0].Text != "hello" || string(a[1].Image) != "png" || a[2].Image != nil ||
		a[3].Text != "[audio: audio/wav, 4 bytes; not shown to the model]" || a[4].Text != "file text" ||
		a[5].Text != "[resource file:///b.bin: application/zip, 2 bytes of binary data]" || a[6].Text != "[resource link: file:///r.pdf (r.pdf), application/pdf]" {
		t.Errorf("anthropic = %+v", a)
	}
	o := provider.DegradeResult(openai.Capabilities, res)
	if o[1].Image != nil || o[1].Text != "[image: image/png, 3 bytes; not shown to the model]" {
		t.Errorf("openai image = %+v", o[1])
	}
	if got := provider.DegradeResult(openai.Capabilities, &gateway.Result{}); len(got) != 1 || got[0].Text == "" {
		t.Errorf("empty result = %+v", got)
	}
}
