package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Error is a model request that failed for good (after the SDK's own
// retries): it names the provider and the HTTP status; Hint says what to do
// about it, and [Error.Remedy] gives it to gateway.ErrorText, which shows
// it after the error's text.
type Error struct {
	Provider string
	// Status is the HTTP status, or 0 when the request got no response.
	Status int
	// Message is the API's own error message, if any.
	Message string
	// Hint says how to fix it, such as which environment variable to set
	// ("set ANTHROPIC_API_KEY to a valid API key, or run \"acp-agent
	// login\""), or "". It is not part of Error's text: gateway.ErrorText
	// shows it after that text, in parentheses ([Error.Remedy]).
	Hint string
	// Host is the API host a request could not reach (Status 0), such as
	// "api.anthropic.com"; "" otherwise.
	Host string
	// TooLong says the provider refused the request for being over the
	// model's context window; such an Error matches ErrPromptTooLong.
	// Limit is the window the refusal named, in tokens, or 0.
	TooLong bool
	Limit   int64
	Err     error
}

// limitPatterns find the window in a "too long" message: Anthropic's
// "prompt is too long: N tokens > M maximum", OpenAI's and vLLM's
// "maximum context length is M tokens".
var limitPatterns = []*regexp.Regexp{
	regexp.MustCompile(`tokens > (\d+) maximum`),
	regexp.MustCompile(`maximum context length is (\d+) tokens`),
}

// tooLongLimit returns the window msg names, or 0.
func tooLongLimit(msg string) int64 {
	for _, re := range limitPatterns {
		if m := re.FindStringSubmatch(msg); m != nil {
			if n, err := strconv.ParseInt(m[1], 10, 64); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// ErrPromptTooLong matches (errors.Is) a provider's refusal of a request
// over the model's context window: Anthropic's 400 "prompt is too long: N
// tokens > M maximum", OpenAI's 400 code context_length_exceeded, the
// like from OpenAI-compatible servers, and Gemini's 400 "The input token
// count (N) exceeds the maximum number of tokens allowed (M)" (read by the
// gemini package). The runner compacts and retries once.
var ErrPromptTooLong = errors.New("the prompt is longer than the model's context window")

// Is reports whether target is ErrPromptTooLong and e is such a refusal.
func (e *Error) Is(target error) bool { return target == ErrPromptTooLong && e.TooLong }

// tooLongMessages are what the APIs say of a prompt over the window, lower
// case: Anthropic's, OpenAI's, and those of vLLM, llama.cpp and Ollama.
var tooLongMessages = []string{
	"prompt is too long",
	"maximum context length",
	"context_length_exceeded",
	"context length exceeded",
	"exceeds the context window",
	"exceed_context_size",
	"input is too long",
	"too many tokens",
}

// isTooLong reports whether an API error of status with msg refuses a
// prompt for its length.
func isTooLong(status int, msg string) bool {
	if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
		return false
	}
	msg = strings.ToLower(msg)
	for _, m := range tooLongMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// LoginCommand is the command that stores an API key in the credentials
// file, named in the hints of a missing or refused key.
const LoginCommand = "acp-agent login"

// Error states what failed, without Hint: "anthropic: HTTP 401
// Unauthorized: invalid x-api-key", "openai: could not reach
// api.openai.com: …", "anthropic: no API key".
func (e *Error) Error() string {
	if e.Status == 0 {
		switch {
		case errors.Is(e.Err, ErrNoAPIKey):
			return fmt.Sprintf("%s: %v", e.Provider, e.Err)
		case e.Host != "":
			return fmt.Sprintf("%s: could not reach %s: %v", e.Provider, e.Host, e.Err)
		}
		return fmt.Sprintf("%s: request failed: %v", e.Provider, e.Err)
	}
	s := fmt.Sprintf("%s: HTTP %d %s", e.Provider, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Remedy is Hint in parentheses, " (check the model name and the base
// URL)", or "" without a Hint: what gateway.ErrorText adds to the error's
// text (a [gateway.Remedier]).
func (e *Error) Remedy() string {
	if e.Hint == "" {
		return ""
	}
	return " (" + e.Hint + ")"
}

// NewError builds the error of a failed HTTP request of provider: status is
// the HTTP status (0 when there was no response), msg the API's own error
// message, and keyEnv the environment variable of the API key, named in the
// hint of a 401 or 403.
func NewError(provider string, status int, msg, keyEnv string, err error) *Error {
	pe := &Error{Provider: provider, Status: status, Message: msg, Err: err, TooLong: isTooLong(status, msg)}
	if pe.TooLong {
		pe.Limit = tooLongLimit(msg)
	}
	switch {
	case status == http.StatusUnauthorized:
		pe.Hint = "set " + keyEnv + " to a valid API key, or run \"" + LoginCommand + "\""
	case status == http.StatusForbidden:
		pe.Hint = "the API key in " + keyEnv + " may not use this model"
	case status == http.StatusNotFound:
		pe.Hint = "check the model name and the base URL"
	case status == http.StatusTooManyRequests:
		pe.Hint = "rate limited, still after the retries; wait and try again"
	case status >= 500:
		pe.Hint = "the provider failed, still after the retries; try again later"
	}
	return pe
}

// NewRequestError builds the error of a request of provider that got no
// HTTP response. A network failure (DNS, refused or timed-out connection,
// TLS) names the host of baseURL (defaultHost when baseURL is empty) and
// still names keyEnv, the variable of the API key, so that an offline user
// with no key learns both; any other error is "request failed".
func NewRequestError(provider, baseURL, defaultHost, keyEnv string, err error) *Error {
	pe := &Error{Provider: provider, Err: err}
	var ne net.Error
	if !errors.As(err, &ne) {
		return pe
	}
	pe.Host = defaultHost
	if u, perr := url.Parse(baseURL); baseURL != "" && perr == nil && u.Host != "" {
		pe.Host = u.Host
	}
	pe.Hint = "check the network connection; the API key is read from " + keyEnv + " or stored by \"" + LoginCommand + "\""
	return pe
}

// ErrNoAPIKey is the cause of a MissingKeyError.
var ErrNoAPIKey = errors.New("no API key")

// MissingKeyError is the error of a request to a provider's own API
// (no base URL set) when no API key is set: it names keyEnv and
// LoginCommand, without sending a request that could only fail.
func MissingKeyError(provider, keyEnv string) *Error {
	return &Error{Provider: provider, Err: ErrNoAPIKey, Hint: "set " + keyEnv + " or run \"" + LoginCommand + "\""}
}

// APIErrorMessage extracts error.message from an API error body (Anthropic
// and OpenAI share the shape), or returns "".
func APIErrorMessage(raw string) string {
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal([]byte(raw), &body) != nil {
		return ""
	}
	msg := body.Error.Message
	if msg == "" {
		msg = body.Message
	}
	return strings.TrimSpace(msg)
}
