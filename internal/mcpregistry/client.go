package mcpregistry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultURL is the official MCP Registry.
const DefaultURL = "https://registry.modelcontextprotocol.io"

// apiPrefix is the registry API version the client speaks: /v0.1, the
// stable one (the registry also serves /v0, its development version).
const apiPrefix = "/v0.1"

// Defaults of [ClientOptions] and [SearchOptions].
const (
	// DefaultTimeout bounds each request when ClientOptions.Timeout is zero.
	DefaultTimeout = 30 * time.Second
	// DefaultSearchLimit is how many servers Search returns at most when
	// SearchOptions.Limit is zero.
	DefaultSearchLimit = 20
	// DefaultPageSize is the ?limit= of each page Search asks for when
	// SearchOptions.PageSize is zero (the official registry's maximum is 100).
	DefaultPageSize = 100
	// DefaultMaxPages bounds the pages one Search reads when
	// SearchOptions.MaxPages is zero.
	DefaultMaxPages = 10
)

// maxBody bounds a response body read: a page of 100 server.json documents
// is well under it.
const maxBody = 16 << 20

// ClientOptions configures a [Client]. The zero value is every default.
type ClientOptions struct {
	// HTTPClient makes the requests; nil is a client of its own with no
	// other settings (proxies from the environment, as net/http does).
	HTTPClient *http.Client
	// Timeout bounds each request, reading the body included; zero or
	// negative is DefaultTimeout (30 s).
	Timeout time.Duration
	// UserAgent is sent as User-Agent when not empty.
	UserAgent string
}

// Client reads one registry. It makes no retries of its own: a failed
// request is the caller's error. Safe for concurrent use.
type Client struct {
	base string // the registry's URL, without a trailing slash
	opts ClientOptions
}

// NewClient returns a client of the registry at baseURL (such as
// [DefaultURL]; a path is kept, so a registry served under a prefix works).
// The URL must be https, or http on a loopback address (127.0.0.0/8, ::1,
// localhost), and carry no credentials, query or fragment. A nil opts is
// every default; opts is copied.
func NewClient(baseURL string, opts *ClientOptions) (*Client, error) {
	if err := CheckURL(baseURL); err != nil {
		return nil, err
	}
	c := &Client{base: strings.TrimRight(baseURL, "/")}
	if opts != nil {
		c.opts = *opts
	}
	if c.opts.HTTPClient == nil {
		c.opts.HTTPClient = &http.Client{}
	}
	if c.opts.Timeout <= 0 {
		c.opts.Timeout = DefaultTimeout
	}
	return c, nil
}

// CheckURL reports whether raw can be a registry's URL: https, or http
// only on loopback, with a host and no credentials, query or fragment.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("registry URL %q: want https://HOST, such as %s", raw, DefaultURL)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("registry URL %q: want https://HOST[/PATH], with no credentials, query or fragment", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		ip := net.ParseIP(u.Hostname())
		if u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
		return fmt.Errorf("registry URL %q: http:// is accepted only on loopback; use https://", raw)
	}
	return fmt.Errorf("registry URL %q: the scheme must be https (http only on loopback)", raw)
}

// URL is the registry's URL, as given to NewClient less a trailing slash.
func (c *Client) URL() string { return c.base }

// SearchOptions bounds a [Client.Search]. The zero value is every default.
type SearchOptions struct {
	// Limit is how many servers to return at most; zero or negative is
	// DefaultSearchLimit (20).
	Limit int
	// PageSize is the ?limit= of each request; zero or negative is
	// DefaultPageSize (100).
	PageSize int
	// MaxPages is how many pages to read at most; zero or negative is
	// DefaultMaxPages (10).
	MaxPages int
	// Version is the ?version= filter; empty is "latest" (one entry per
	// server, its latest version).
	Version string
}

// Search returns the servers that match every one of words, in the
// registry's order, at most opts.Limit of them. The registry is asked for
// the first word (?search=, a case-insensitive substring of the name, and
// on the official registry of the description too); every word must then
// appear, ignoring case, in the server's name, title or description. Pages
// are followed by cursor until Limit servers matched, the registry has no
// more, or MaxPages were read. No words lists the registry's servers. A nil
// opts is every default.
func (c *Client) Search(ctx context.Context, words []string, opts *SearchOptions) ([]ServerResponse, error) {
	var o SearchOptions
	if opts != nil {
		o = *opts
	}
	if o.Limit <= 0 {
		o.Limit = DefaultSearchLimit
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	if o.Version == "" {
		o.Version = "latest"
	}
	q := url.Values{}
	if len(words) > 0 {
		q.Set("search", words[0])
	}
	q.Set("limit", strconv.Itoa(o.PageSize))
	q.Set("version", o.Version)
	var found []ServerResponse
	for range o.MaxPages {
		var page ServerList
		if err := c.get(ctx, apiPrefix+"/servers?"+q.Encode(), &page); err != nil {
			return nil, err
		}
		for _, s := range page.Servers {
			if matches(s.Server, words) {
				found = append(found, s)
				if len(found) == o.Limit {
					return found, nil
				}
			}
		}
		if page.Metadata.NextCursor == "" || page.Metadata.NextCursor == q.Get("cursor") {
			break
		}
		q.Set("cursor", page.Metadata.NextCursor)
	}
	return found, nil
}

// matches reports whether every word is in s's name, title or description,
// ignoring case.
func matches(s Server, words []string) bool {
	text := strings.ToLower(s.Name + "\n" + s.Title + "\n" + s.Description)
	for _, w := range words {
		if !strings.Contains(text, strings.ToLower(w)) {
			return false
		}
	}
	return true
}

// Get returns the server called name (its registry name,
// "io.github.owner/name") at version; an empty version is "latest". A
// server or version the registry does not have is an error wrapping
// [ErrNotFound].
func (c *Client) Get(ctx context.Context, name, version string) (*ServerResponse, error) {
	if name == "" {
		return nil, errors.New("registry: no server name given")
	}
	if version == "" {
		version = "latest"
	}
	var res ServerResponse
	err := c.get(ctx, apiPrefix+"/servers/"+url.PathEscape(name)+"/versions/"+url.PathEscape(version), &res)
	if errors.Is(err, ErrNotFound) {
		if version == "latest" {
			return nil, fmt.Errorf("server %q: %w (%s)", name, err, c.base)
		}
		return nil, fmt.Errorf("server %q version %q: %w (%s)", name, version, err, c.base)
	}
	if err != nil {
		return nil, err
	}
	if res.Server.Name == "" {
		return nil, fmt.Errorf("registry %s: the answer for %q has no server", c.base, name)
	}
	return &res, nil
}

// get fetches path (escaped, with its query) from the registry and decodes
// its JSON into v, within the client's timeout.
func (c *Client) get(ctx context.Context, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	u := c.base + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("registry %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	if c.opts.UserAgent != "" {
		req.Header.Set("User-Agent", c.opts.UserAgent)
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("registry %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("registry %s: reading the answer: %w", u, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return ErrNotFound
	case resp.StatusCode != http.StatusOK:
		var e struct {
			Error  string `json:"error"`
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(body, &e)
		msg := e.Error
		if msg == "" {
			msg = e.Detail
		}
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return &StatusError{URL: u, Status: resp.StatusCode, Message: msg}
	case len(body) > maxBody:
		return fmt.Errorf("registry %s: the answer is over %d bytes", u, maxBody)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("registry %s: the answer is not the registry API's JSON: %w", u, err)
	}
	return nil
}
