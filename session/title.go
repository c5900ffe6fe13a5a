package session

import (
	"context"
	"strings"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/textsafe"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// Session titles. A session's first stored turn gives it the first line of
// its prompt as title (store.TitleFrom, in AppendTurn). With a model that
// can answer outside a turn (gateway.Sampler), the model then writes a
// short title from that prompt, in the background: one request of at most
// titleMaxTokens output tokens, no tools, no history (gateway.PurposeTitle).
// It replaces the prompt's words in the store unless the client has set a
// title meanwhile (Core.SetTitle), and a FrontEnd that is a TitleWatcher
// is told. It ends with the session, and a failure only keeps the prompt's
// words (logged). Its tokens are logged, not added to the session's usage,
// which counts turns.

const (
	// titleMaxTokens caps the model's title.
	titleMaxTokens = 32
	// titlePromptBytes caps how much of the first prompt the model is
	// shown, about 500 tokens.
	titlePromptBytes = 2000
	// titleTimeout bounds the title request.
	titleTimeout = 30 * time.Second
	// titleSystem is the title request's system prompt.
	titleSystem = "You write the title of a conversation between a user and a coding assistant, from the user's first message. " +
		"Answer with the title alone: 3 to 7 words, in the language of the message, no quotes, no final period."
)

// TitleWatcher is a FrontEnd told when the model has written the title of
// one of its sessions after the first turn (ACP session_info_update),
// unless a turn of the session is running then: the title is stored, and a
// front end that reports the stored title as each turn ends (acp does)
// reports it with that turn, never in the midst of it. It is called from
// the session's background goroutine, with a bounded ctx.
type TitleWatcher interface {
	TitleChanged(ctx context.Context, sessionID, title string)
}

// afterFirstTurn starts the model's title of s from prompt, the text of its
// first stored turn's prompt, when s has no title yet and its model can
// answer outside a turn. It is called once per session, after each turn
// that went to the store.
func (s *Session) afterFirstTurn(prompt string) {
	s.mu.Lock()
	untitled := s.untitled
	s.untitled = false
	model := s.model
	s.mu.Unlock()
	gs, ok := s.core.gw.(gateway.Sampler)
	if !untitled || !ok || !gs.CanSample(model) || strings.TrimSpace(prompt) == "" {
		return
	}
	if len(prompt) > titlePromptBytes {
		prompt = strings.ToValidUTF8(prompt[:titlePromptBytes], "")
	}
	ctx, cancel := s.background.Bind(s.base)
	s.tasks.Go(func() {
		defer cancel()
		ctx, stop := context.WithTimeout(ctx, titleTimeout)
		defer stop()
		s.writeTitle(ctx, gs, model, prompt)
	})
}

// writeTitle asks the model for the title and stores it, unless the client
// has set one.
func (s *Session) writeTitle(ctx context.Context, gs gateway.Sampler, model, prompt string) {
	log := s.core.log.With("session", s.id)
	res, err := gs.Sample(ctx, gateway.SampleRequest{Model: model, System: titleSystem, MaxTokens: titleMaxTokens, Purpose: gateway.PurposeTitle,
		Messages: []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent(prompt)}}}})
	if err != nil {
		log.Info("the model did not write the session's title: it keeps its first prompt's words", "err", err)
		return
	}
	title := cleanTitle(gateway.PromptText(res.Message.Content))
	log.Info("the model wrote the session's title", "inputTokens", res.Usage.InputTokens, "outputTokens", res.Usage.OutputTokens,
		"cacheReadTokens", res.Usage.CacheReadTokens, "empty", title == "")
	if title == "" {
		return
	}
	// The client's title wins: the flag is read and the title stored under
	// titleMu, which Core.SetTitle holds too.
	s.titleMu.Lock()
	defer s.titleMu.Unlock()
	if s.clientTitle {
		return
	}
	if err := s.core.store.SetTitle(ctx, s.id, title); err != nil {
		log.Warn("storing the session's title failed", "err", err)
		return
	}
	s.core.history.NoteTitle(s.key, title)
	s.mu.Lock()
	running := s.turnDone != nil
	s.mu.Unlock()
	if tw, ok := s.frontEnd.(TitleWatcher); ok && !running {
		tw.TitleChanged(ctx, s.id, title)
	}
}

// cleanTitle makes a title of the model's answer: its first non-empty
// line, without a "Title:" label, quotes or a final period, escape
// sequences, control and format characters, at most store.MaxTitleRunes
// runes (textsafe.Line); "" when nothing is left.
func cleanTitle(answer string) string {
	for line := range strings.SplitSeq(answer, "\n") {
		line = textsafe.Line(line, 0)
		if line == "" {
			continue
		}
		if l, rest, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(strings.Trim(l, "*#")), "title") {
			line = strings.TrimSpace(rest)
		}
		const marks = " \"'`“”‘’«»*#"
		return textsafe.Line(strings.Trim(strings.TrimRight(strings.Trim(line, marks), "."), marks), store.MaxTitleRunes)
	}
	return ""
}
