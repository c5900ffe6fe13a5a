package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	_ "image/gif"  // image.DecodeConfig of GIF results
	_ "image/jpeg" // and JPEG
	_ "image/png"  // and PNG
	"log/slog"
	"sync"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// Token estimates. The runner must know how large a request is before it
// sends it (to compact in time) without a tokenizer for every model, so it
// estimates: one token per [bytesPerToken] bytes of text, JSON and schema,
// a few tokens of framing per message, and an image by the pixels rule
// Anthropic documents (width×height/750, at most [maxImageTokens]). The
// estimate is then scaled per session by what the provider reported for
// the last request (see [calibration]), so the threshold tracks the
// model's real tokenizer.
const (
	bytesPerToken   = 4
	messageOverhead = 4
	// maxImageTokens is what an image costs at most: Anthropic scales
	// images down to about 1.15 megapixels (~1,600 tokens).
	maxImageTokens = 1600
	// unknownImageTokens is the cost of an image whose size cannot be read.
	unknownImageTokens = 1000
)

// textTokens estimates the tokens of s.
func textTokens(s string) int64 { return int64((len(s) + bytesPerToken - 1) / bytesPerToken) }

// imageTokens estimates what an image costs a model.
func imageTokens(data []byte) int64 {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return unknownImageTokens
	}
	return min(int64(cfg.Width)*int64(cfg.Height)/750+1, maxImageTokens)
}

// contentTokens estimates the tokens of content blocks.
func contentTokens(content []gateway.Content) int64 {
	var n int64
	for _, c := range content {
		switch c.Type {
		case gateway.ContentImage:
			n += imageTokens(c.Data)
		case gateway.ContentResource:
			if c.Resource != nil {
				n += textTokens(c.Resource.Text) + textTokens(c.Resource.URI) + 8
			}
		default:
			n += textTokens(c.Text) + textTokens(c.URI) + 8
		}
	}
	return n
}

// messageTokens estimates the tokens of one message as a provider sees it
// (a tool result within its budget: see [budgeted]).
func messageTokens(m gateway.Message) int64 {
	n := int64(messageOverhead) + contentTokens(m.Content) + textTokens(m.Thinking)
	for _, c := range m.ToolCalls {
		args, _ := json.Marshal(c.Args)
		n += textTokens(c.Name) + textTokens(c.ID) + textTokens(string(args)) + messageOverhead
	}
	if m.Result != nil {
		n += contentTokens(m.Result.Content) + textTokens(m.ToolCallID)
	}
	if m.ServerCompaction != nil {
		n += textTokens(m.ServerCompaction.Summary) + messageOverhead
	}
	return n
}

// messagesTokens estimates the tokens of msgs.
func messagesTokens(msgs []gateway.Message) int64 {
	var n int64
	for _, m := range msgs {
		n += messageTokens(m)
	}
	return n
}

// toolTokens estimates the tokens of one tool definition.
func toolTokens(t *gateway.Tool) int64 {
	return textTokens(t.Name) + textTokens(t.Description) + textTokens(string(t.InputSchema)) + 2*messageOverhead
}

// toolsTokens estimates the tokens of tool definitions.
func toolsTokens(tools []*gateway.Tool) int64 {
	var n int64
	for _, t := range tools {
		n += toolTokens(t)
	}
	return n
}

// requestTokens estimates the prompt tokens of req: the messages from the
// provider's last compaction on, since the provider drops those before it.
func requestTokens(req *gateway.Request) int64 {
	return textTokens(req.System) + toolsTokens(req.Tools) + messagesTokens(gateway.FromServerCompaction(req.Messages))
}

// calibration keeps, per session, the ratio of the prompt tokens a
// provider reported to the runner's estimate of the same request, so that
// later estimates follow the model's tokenizer. It is safe for concurrent
// use.
type calibration struct {
	mu    sync.Mutex
	ratio map[string]float64 // session key → reported/estimated, within [minRatio, maxRatio]
}

const minRatio, maxRatio = 0.5, 4.0

// minClearedRatio is the least ratio of a request whose provider cleared
// tool results (gateway.ContextClearToolUses): the prompt it counted may
// be a small part of the history the runner estimated.
const minClearedRatio = 0.02

// scale returns est scaled by the session's ratio (1 before any report).
func (c *calibration) scale(key string, est int64) int64 {
	c.mu.Lock()
	r, ok := c.ratio[key]
	c.mu.Unlock()
	if !ok {
		return est
	}
	return int64(float64(est) * r)
}

// observe records that a request estimated at est had reported prompt
// tokens; the ratio kept is at least floor (minRatio, unless the provider
// edited the prompt).
func (c *calibration) observe(key string, est, reported int64, floor float64) {
	if est <= 0 || reported <= 0 {
		return
	}
	r := min(max(float64(reported)/float64(est), floor), maxRatio)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ratio == nil {
		c.ratio = make(map[string]float64)
	}
	c.ratio[key] = r
}

func (c *calibration) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.ratio, key)
}

// windows caches the context windows that providers report
// (gateway.WindowReporter), by model ID: each is asked once per process,
// and an answer of "unknown" or a failure is kept too. Safe for concurrent
// use.
type windows struct {
	mu      sync.Mutex
	m       map[string]*windowAnswer
	learned map[string]int64 // model ID → the window a "too long" refusal named
}

// learn records that model id's provider refused a prompt over a window of
// limit tokens, which later turns use when it is below the model's own;
// it returns limit.
func (w *windows) learn(id string, limit int64, log *slog.Logger) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.learned == nil {
		w.learned = make(map[string]int64)
	}
	if old := w.learned[id]; old == 0 || limit < old {
		w.learned[id] = limit
		log.Warn("the provider refused a prompt over a smaller context window than configured: using its window", "model", id, "tokens", limit)
	}
	return limit
}

// windowAnswer is one model's reported window; done is closed once n is set.
type windowAnswer struct {
	done chan struct{}
	n    int64
}

// reportTimeout bounds asking a provider for its model's window.
const reportTimeout = 10 * time.Second

// of returns model's context window: the one a refusal taught (learn) when
// smaller, else its own, else the one its provider reports (asked once;
// concurrent callers wait for the one question), else 0.
func (w *windows) of(ctx context.Context, model gateway.Model, log *slog.Logger) int64 {
	w.mu.Lock()
	learned := w.learned[model.ID]
	w.mu.Unlock()
	if learned > 0 && (model.ContextWindow == 0 || learned < model.ContextWindow) {
		return learned
	}
	rep, ok := model.Provider.(gateway.WindowReporter)
	if model.ContextWindow > 0 || !ok {
		return model.ContextWindow
	}
	w.mu.Lock()
	if w.m == nil {
		w.m = make(map[string]*windowAnswer)
	}
	a := w.m[model.ID]
	first := a == nil
	if first {
		a = &windowAnswer{done: make(chan struct{})}
		w.m[model.ID] = a
	}
	w.mu.Unlock()
	if first {
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
		n, err := rep.ReportedWindow(qctx)
		cancel()
		if err != nil {
			log.Info("the provider did not report the model's context window; set model.contextWindow for compaction before it is full", "model", model.ID, "err", err)
		} else if n > 0 {
			log.Info("context window reported by the provider", "model", model.ID, "tokens", n)
		}
		a.n = max(n, 0)
		close(a.done)
	}
	select {
	case <-a.done:
		return a.n
	case <-ctx.Done():
		return 0
	}
}
