package fakemodel

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"unicode/utf8"
)

// event is one Server-Sent Event. An empty name sends only a data line.
type event struct {
	name string
	data any // marshalled to JSON, or sent verbatim if a string
}

// retryable reports whether the SDKs retry a response with this status.
func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(marshal(v), '\n'))
}

// encode renders the event in the text/event-stream format.
func (ev event) encode() []byte {
	var b bytes.Buffer
	if ev.name != "" {
		b.WriteString("event: " + ev.name + "\n")
	}
	b.WriteString("data: ")
	if s, ok := ev.data.(string); ok {
		b.WriteString(s)
	} else {
		b.Write(marshal(ev.data))
	}
	b.WriteString("\n\n")
	return b.Bytes()
}

// marshal encodes v as the APIs do: compact, with <, > and & left as they are.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("fakemodel: " + err.Error()) // only our own values are encoded
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// resolve fills in a turn's defaults: the stop reason, tool call ids (with
// prefix) and empty arguments.
func resolve(turn Turn, n int, prefix string) Turn {
	if turn.StopReason == "" {
		turn.StopReason = "end_turn"
		if len(turn.ToolCalls) > 0 {
			turn.StopReason = "tool_use"
		}
	}
	calls := make([]ToolCall, len(turn.ToolCalls))
	for i, c := range turn.ToolCalls {
		if c.ID == "" {
			c.ID = prefix + strconv.Itoa(n) + "_" + strconv.Itoa(i)
		}
		if c.Args == "" {
			c.Args = "{}"
		}
		calls[i] = c
	}
	turn.ToolCalls = calls
	return turn
}

// chunks splits s into pieces of at least size bytes (the last may be
// shorter), never inside a UTF-8 character.
func chunks(s string, size int) []string {
	var out []string
	for len(s) > 0 {
		i := min(size, len(s))
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// pieces splits s into about n pieces, never inside a UTF-8 character.
func pieces(s string, n int) []string {
	return chunks(s, max(1, (len(s)+n-1)/n))
}
