package gateway

import (
	"encoding/json"
	"testing"
)

func TestNormalizeSchema(t *testing.T) {
	tests := []struct {
		name string
		caps Capabilities
		in   string
		want string
	}{
		{"empty", AnthropicCapabilities, ``, `{"properties":{},"type":"object"}`},
		{"null", AnthropicCapabilities, `null`, `{"properties":{},"type":"object"}`},
		{"no properties", OpenAICapabilities, `{"type":"object"}`, `{"properties":{},"type":"object"}`},
		{"no type", OpenAICapabilities, `{"properties":{"a":{"type":"string"}}}`, `{"properties":{"a":{"type":"string"}},"type":"object"}`},
		{"$schema stripped", AnthropicCapabilities, `{"$schema":"http://json-schema.org/draft-07/schema#","$id":"x","type":"object","properties":{},"required":["a"]}`, `{"properties":{},"required":["a"],"type":"object"}`},
		{"root string falls back", OpenAICapabilities, `{"type":"string"}`, `{"properties":{},"type":"object"}`},
		{"root anyOf falls back", AnthropicCapabilities, `{"anyOf":[{"type":"object"},{"type":"null"}]}`, `{"properties":{},"type":"object"}`},
		{"type list falls back", OpenAICapabilities, `{"type":["object","null"]}`, `{"properties":{},"type":"object"}`},
		{"not an object", OpenAICapabilities, `[1,2]`, `{"properties":{},"type":"object"}`},
		{"openai drops a bad required", OpenAICapabilities, `{"type":"object","properties":{},"required":true}`, `{"properties":{},"type":"object"}`},
		{"nested kept", AnthropicCapabilities, `{"type":"object","properties":{"o":{"type":"object","additionalProperties":false}},"additionalProperties":false}`, `{"additionalProperties":false,"properties":{"o":{"additionalProperties":false,"type":"object"}},"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := json.Marshal(NormalizeSchema(tt.caps, "tool", json.RawMessage(tt.in), nil))
			if string(got) != tt.want {
				t.Errorf("NormalizeSchema(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestDegradeResult(t *testing.T) {
	res := &Result{Content: []Content{
		TextContent("hello"),
		{Type: ContentImage, Data: []byte("png"), MIMEType: "image/png"},
		{Type: ContentImage, Data: []byte("bmp"), MIMEType: "image/bmp"},
		{Type: ContentAudio, Data: []byte("wav!"), MIMEType: "audio/wav"},
		{Type: ContentResource, Resource: &EmbeddedResource{URI: "file:///a.txt", Text: "file text"}},
		{Type: ContentResource, Resource: &EmbeddedResource{URI: "file:///b.bin", MIMEType: "application/zip", Blob: []byte{1, 2}}},
		{Type: ContentResourceLink, URI: "file:///r.pdf", Name: "r.pdf", MIMEType: "application/pdf"},
	}}
	a := DegradeResult(AnthropicCapabilities, res)
	if len(a) != 7 || a[0].Text != "hello" || string(a[1].Image) != "png" || a[2].Image != nil ||
		a[3].Text != "[audio: audio/wav, 4 bytes; not shown to the model]" || a[4].Text != "file text" ||
		a[5].Text != "[resource file:///b.bin: application/zip, 2 bytes of binary data]" || a[6].Text != "[resource link: file:///r.pdf (r.pdf), application/pdf]" {
		t.Errorf("anthropic = %+v", a)
	}
	o := DegradeResult(OpenAICapabilities, res)
	if o[1].Image != nil || o[1].Text != "[image: image/png, 3 bytes; not shown to the model]" {
		t.Errorf("openai image = %+v", o[1])
	}
	if got := DegradeResult(OpenAICapabilities, &Result{}); len(got) != 1 || got[0].Text == "" {
		t.Errorf("empty result = %+v", got)
	}
}
