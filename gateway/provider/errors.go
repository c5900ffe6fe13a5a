package provider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Error is a model request that failed for good (after the SDK's own
// retries): it names the provider, the HTTP status and what to do about it.
type Error struct {
	Provider string
	// Status is the HTTP status, or 0 when the request got no response.
	Status int
	// Message is the API's own error message, if any.
	Message string
	// Hint says how to fix it, such as which environment variable to set.
	Hint string
	Err  error
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s: request failed: %v", e.Provider, e.Err)
	}
	s := fmt.Sprintf("%s: HTTP %d %s", e.Provider, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// NewError builds the error of a failed HTTP request of provider: status is
// the HTTP status (0 when there was no response), msg the API's own error
// message, and keyEnv the environment variable of the API key, named in the
// hint of a 401 or 403.
func NewError(provider string, status int, msg, keyEnv string, err error) *Error {
	pe := &Error{Provider: provider, Status: status, Message: msg, Err: err}
	switch {
	case status == http.StatusUnauthorized:
		pe.Hint = "set " + keyEnv + " to a valid API key"
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
