package acp

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
)

func TestCheckPromptMedia(t *testing.T) {
	const max = 1000
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(make([]byte, n)) }
	blob := func(n int) acpsdk.ContentBlock {
		return acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{BlobResourceContents: &acpsdk.BlobResourceContents{Uri: "file:///b", Blob: b64(n)}})
	}
	tests := []struct {
		name   string
		prompt []acpsdk.ContentBlock
		want   string // part of the error; "" none
	}{
		{"image at the limit", []acpsdk.ContentBlock{acpsdk.TextBlock("x"), acpsdk.ImageBlock(b64(max), "image/png")}, ""},
		{"image over the limit", []acpsdk.ContentBlock{acpsdk.TextBlock("x"), acpsdk.ImageBlock(b64(max+1), "image/png")}, "prompt[1]: the image (image/png) is 1001 B (1001 bytes), over the limit of 1000 B"},
		{"audio over", []acpsdk.ContentBlock{acpsdk.AudioBlock(b64(max+2), "audio/wav")}, "prompt[0]: the audio (audio/wav)"},
		{"blob at the limit", []acpsdk.ContentBlock{blob(max - 1), blob(max)}, ""},
		{"blob over", []acpsdk.ContentBlock{blob(max + 1)}, "the resource file:///b"},
		{"long text", []acpsdk.ContentBlock{acpsdk.TextBlock(strings.Repeat("t", 10*max))}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkPromptMedia(tt.prompt, max)
			if tt.want == "" {
				if err != nil {
					t.Errorf("err = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "limits.maxMediaBytes") {
				t.Errorf("err = %v, want ErrInvalidParams with %q", err, tt.want)
			}
		})
	}
}

// recordingGateway records the prompts it is sent.
type recordingGateway struct {
	gateway.Gateway
	mu   sync.Mutex
	sent [][]gateway.Content
}

func (g *recordingGateway) Send(ctx context.Context, req gateway.SendRequest, emit func(gateway.Event)) (gateway.StopReason, error) {
	g.mu.Lock()
	g.sent = append(g.sent, req.Message)
	g.mu.Unlock()
	return g.Gateway.Send(ctx, req, emit)
}

// TestPrompt_MediaLimit: an image of limits.maxMediaBytes (the default,
// 5 MiB) reaches the gateway intact; one byte more is refused with
// invalid_params instead of being passed on.
func TestPrompt_MediaLimit(t *testing.T) {
	gw := &recordingGateway{Gateway: runner.NewLocal(nil)}
	h := startAgentWith(t, testOptions{Gateway: gw})
	sid := h.newSession()
	img := make([]byte, 5<<20)
	for i := range img {
		img[i] = byte(i)
	}
	res, err := h.conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid), Prompt: []acpsdk.ContentBlock{
		acpsdk.TextBlock("what is this?"), acpsdk.ImageBlock(base64.StdEncoding.EncodeToString(img), "image/png"),
	}})
	if err != nil {
		t.Fatalf("prompt with an image of 5 MiB: %v", err)
	}
	gw.mu.Lock()
	got := gw.sent
	gw.mu.Unlock()
	if res.StopReason != acpsdk.StopReasonEndTurn || len(got) != 1 || len(got[0]) != 2 || string(got[0][1].Data) != string(img) {
		t.Fatalf("stop %q, sent %d prompts: the image did not reach the gateway intact", res.StopReason, len(got))
	}

	_, err = h.conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid), Prompt: []acpsdk.ContentBlock{
		acpsdk.ImageBlock(base64.StdEncoding.EncodeToString(append(img, 0)), "image/png"),
	}})
	var re *acpsdk.RequestError
	if !errors.As(err, &re) || re.Code != -32602 || !strings.Contains(re.Message, "limits.maxMediaBytes") {
		t.Fatalf("prompt with an image over the limit: %v, want invalid_params naming limits.maxMediaBytes", err)
	}
	gw.mu.Lock()
	defer gw.mu.Unlock()
	if len(gw.sent) != 1 {
		t.Error("the image over the limit reached the gateway")
	}
}
