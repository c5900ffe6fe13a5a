package provider_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/anthropic"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider/openai"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// offlineClient fails every connection as an offline machine does: the
// name does not resolve.
func offlineClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}}
	}}}
}

// closedURL is a loopback URL that refuses connections.
func closedURL(t *testing.T) string {
	return "http://" + testutil.RefusedAddr(t)
}

func TestProviders_UnreachableNamesHostAndKeyVariable(t *testing.T) {
	closed := closedURL(t)
	cases := []struct {
		name string
		p    gateway.Provider
		want []string // in the error's text
		hint []string // in its Hint
	}{
		{"anthropic offline", anthropic.New(&provider.Options{Model: "m", APIKey: "k", MaxRetries: -1, HTTPClient: offlineClient()}),
			[]string{"anthropic: could not reach api.anthropic.com", "no such host"}, []string{"ANTHROPIC_API_KEY", `"acp-agent login"`}},
		{"openai offline", openai.New(&provider.Options{Model: "m", APIKey: "k", MaxRetries: -1, HTTPClient: offlineClient()}),
			[]string{"openai: could not reach api.openai.com", "no such host"}, []string{"OPENAI_API_KEY", `"acp-agent login"`}},
		{"openai base URL refused", openai.New(&provider.Options{Model: "m", BaseURL: closed + "/v1", APIKeyEnv: "MY_KEY", MaxRetries: -1}),
			[]string{"openai: could not reach " + strings.TrimPrefix(closed, "http://")}, []string{"MY_KEY"}},
		{"anthropic no key", anthropic.New(&provider.Options{Model: "m", MaxRetries: -1, HTTPClient: offlineClient()}),
			[]string{"anthropic: no API key"}, []string{"set ANTHROPIC_API_KEY", `"acp-agent login"`}},
		{"openai no key", openai.New(&provider.Options{Model: "m", MaxRetries: -1, HTTPClient: offlineClient()}),
			[]string{"openai: no API key"}, []string{"set OPENAI_API_KEY", `"acp-agent login"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.p.Complete(t.Context(), &gateway.Request{Messages: []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{{Type: gateway.ContentText, Text: "hi"}}}}}, func(gateway.Event) {})
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *provider.Error", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, w := range c.hint {
				if !strings.Contains(pe.Hint, w) || strings.Contains(err.Error(), w) {
					t.Errorf("hint %q lacks %q, or the error %q has it", pe.Hint, w, err)
				}
			}
		})
	}
}

func TestProviders_APIKeyFuncIsReadPerRequestAndRefusedKeyNamesLogin(t *testing.T) {
	s := fakemodel.NewAnthropic(t, fakemodel.Turn{Text: "ok"}, fakemodel.Turn{Status: http.StatusUnauthorized, Text: "invalid x-api-key"})
	key := "first"
	p := anthropic.New(&provider.Options{Model: "m", BaseURL: s.URL, MaxRetries: -1, APIKeyFunc: func() string { return key }})
	req := &gateway.Request{Messages: []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{{Type: gateway.ContentText, Text: "hi"}}}}}
	if _, err := p.Complete(t.Context(), req, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	key = "second"
	_, err := p.Complete(t.Context(), req, func(gateway.Event) {})
	var pe *provider.Error
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(pe.Hint, `"acp-agent login"`) {
		t.Errorf("401 error = %v, want HTTP 401 with a hint naming acp-agent login", err)
	}
	rs := s.Requests()
	if len(rs) != 2 || rs[0].Header.Get("x-api-key") != "first" || rs[1].Header.Get("x-api-key") != "second" {
		t.Errorf("requests' keys = %v, want first then second", rs)
	}
}
