package bridge

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
)

// MCP resources (https://modelcontextprotocol.io/specification/2025-11-25/server/resources):
// a server that advertises the resources capability has its resources and
// resource templates listed at connect (paged, bounded by the list timeout
// and MaxResourcesPerServer; a failure is logged and the server stays
// connected), again on notifications/resources/list_changed, and a
// resource read in the session is subscribed to (when the server offers
// subscriptions) so that notifications/resources/updated marks it updated.

// MaxResourcesPerServer bounds how many resources, and separately how many
// resource templates, are kept of one server; the rest are left out with a
// log line (a server may list millions of files).
const MaxResourcesPerServer = 1000

// ErrUnknownResource: no server of the session lists the URI or has a
// template that matches it.
var ErrUnknownResource = errors.New("no MCP server of this session serves the resource")

// Resource is one resource a server lists (MCP resources/list).
type Resource struct {
	URI, Name, Title, Description, MIMEType string
	// Size is the size in bytes the server declares; 0 means unknown.
	Size int64
	// Updated reports that notifications/resources/updated arrived for the
	// resource since the session last read it.
	Updated bool
}

// ResourceTemplate is one resource template a server lists (MCP
// resources/templates/list); URITemplate is an RFC 6570 URI template.
type ResourceTemplate struct {
	URITemplate, Name, Title, Description, MIMEType string
}

// ServerResources is what one server of a session offers as resources.
type ServerResources struct {
	// Server is the server's name in the session.
	Server    string
	Resources []Resource
	Templates []ResourceTemplate
}

// resourceCache is what a server offers as resources, and the bridge's
// marks on them. The zero value is empty.
type resourceCache struct {
	// mu guards resources, templates, compiled, updated and subscribed. It
	// is taken inside the Manager's mu (bridging asks has), never the other
	// way round, and never held across a request.
	mu         sync.Mutex
	resources  []*mcp.Resource
	templates  []*mcp.ResourceTemplate
	compiled   []*uritemplate.Template // parallel to templates; nil for a template that does not parse
	updated    map[string]bool         // URI → resources/updated arrived since the last read
	subscribed map[string]bool         // URIs the bridge subscribed to (resources/subscribe)
	refresh    rerun                   // list_changed refreshes
}

// set replaces the lists and reports whether the server has resources now
// and had them before.
func (r *resourceCache) set(res []*mcp.Resource, tpl []*mcp.ResourceTemplate) (had, has bool) {
	compiled := make([]*uritemplate.Template, len(tpl))
	for i, t := range tpl {
		compiled[i], _ = uritemplate.New(t.URITemplate) // a bad template just matches nothing
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	had = len(r.resources)+len(r.templates) > 0
	r.resources, r.templates, r.compiled = res, tpl, compiled
	return had, len(res)+len(tpl) > 0
}

// has reports whether the server lists any resource or template.
func (r *resourceCache) has() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.resources)+len(r.templates) > 0
}

// serves reports whether the server lists uri (exact) or, failing that,
// has a template matching it (RFC 6570 matching by uritemplate).
func (r *resourceCache) serves(uri string) (listed, matched bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, res := range r.resources {
		if res.URI == uri {
			return true, true
		}
	}
	for _, t := range r.compiled {
		if t != nil && t.Match(uri) != nil {
			return false, true
		}
	}
	return false, false
}

// snapshot returns the lists for Manager.Resources.
func (r *resourceCache) snapshot(server string) ServerResources {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := ServerResources{Server: server}
	for _, x := range r.resources {
		out.Resources = append(out.Resources, Resource{URI: x.URI, Name: x.Name, Title: x.Title,
			Description: x.Description, MIMEType: x.MIMEType, Size: x.Size, Updated: r.updated[x.URI]})
	}
	for _, t := range r.templates {
		out.Templates = append(out.Templates, ResourceTemplate{URITemplate: t.URITemplate, Name: t.Name,
			Title: t.Title, Description: t.Description, MIMEType: t.MIMEType})
	}
	return out
}

// markUpdated marks uri updated (notifications/resources/updated) until it
// is read again.
func (r *resourceCache) markUpdated(uri string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.updated == nil {
		r.updated = make(map[string]bool)
	}
	r.updated[uri] = true
}

// read clears the updated mark of uri after a read and reports whether the
// bridge should subscribe to it now: canSubscribe (the server offers
// subscriptions) and not subscribed before. It counts uri as subscribed.
func (r *resourceCache) read(uri string, canSubscribe bool) (subscribe bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.updated, uri)
	subscribe = canSubscribe && !r.subscribed[uri]
	if subscribe {
		if r.subscribed == nil {
			r.subscribed = make(map[string]bool)
		}
		r.subscribed[uri] = true
	}
	return subscribe
}

// offersResources reports whether cs's server advertises resources.
func offersResources(cs *mcp.ClientSession) *mcp.ResourceCapabilities {
	res := cs.InitializeResult()
	if res == nil || res.Capabilities == nil {
		return nil
	}
	return res.Capabilities.Resources
}

// loadResources lists the resources and templates of a server that offers
// them, and keeps them. A failure is logged and leaves the old lists: it
// never fails the server. It reports whether the server's having resources
// changed (the resource tools come or go).
func (s *client) loadResources(ctx context.Context, cs *mcp.ClientSession) (changed bool) {
	if offersResources(cs) == nil {
		return false
	}
	lctx, cancel := context.WithTimeout(ctx, s.timeouts.ToolsList)
	defer cancel()
	res, err := collect(lctx, "resources/list", cs.Resources(lctx, nil))
	var tpl []*mcp.ResourceTemplate
	if err == nil {
		tpl, err = collect(lctx, "resources/templates/list", cs.ResourceTemplates(lctx, nil))
	}
	if err != nil {
		if errors.Is(lctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w: listing resources took longer than %s", ErrTimeout, s.timeouts.ToolsList)
		}
		s.log.Warn("listing the server's resources failed; it stays connected without them", "err", err)
		return false
	}
	had, has := s.res.set(res, tpl)
	s.log.Debug("resources listed", "resources", len(res), "templates", len(tpl))
	return had != has
}

// collect pages through a list, keeping at most MaxResourcesPerServer items.
func collect[T any](ctx context.Context, method string, seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for x, err := range seq {
		if err != nil {
			return nil, fmt.Errorf("%s failed: %w", method, err)
		}
		if len(out) == MaxResourcesPerServer {
			return out, nil // the iterator stops asking for pages
		}
		out = append(out, x)
	}
	return out, ctx.Err()
}

// onResourceListChanged handles notifications/resources/list_changed: the
// lists are fetched again in the background (one refresh at a time; a
// notification during a refresh runs one more). When the server gains or
// loses its last resource, the tools are bridged again.
func (s *client) onResourceListChanged(ctx context.Context, _ *mcp.ResourceListChangedRequest) {
	s.listChanged(ctx, &s.res.refresh, s.refreshResources)
}

// refreshResources lists the resources and templates again; when the
// server gained or lost its last one, the tools are bridged again. ctx ends
// when the server closes.
func (s *client) refreshResources(ctx context.Context) {
	changed := false
	if cs, err := s.conn.session(); err == nil {
		changed = s.loadResources(ctx, cs)
	}
	if changed && ctx.Err() == nil && s.onToolsChanged != nil {
		s.onToolsChanged()
	}
}

// onResourceUpdated handles notifications/resources/updated: /resources
// shows the resource as updated until it is read again.
func (s *client) onResourceUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if req == nil || req.Params == nil {
		return
	}
	s.res.markUpdated(req.Params.URI)
}

// readResource sends resources/read for uri, counted against the server's
// rate limit and bounded by the call timeout. The contents become embedded
// resource blocks under the session's result limits (Limits.MaxResultText
// for text, Limits.MaxMedia per blob), as tool results are. After a
// successful read the resource is no longer marked updated, and it is
// subscribed to when the server offers subscriptions (best effort).
func (s *client) readResource(ctx context.Context, uri string) (gateway.Result, error) {
	if err := s.limiter.Allow(); err != nil {
		return gateway.Result{}, err
	}
	defer s.use()() // a lazy server rests after its last request (lazy.go)
	cs, err := s.liveSession(ctx)
	if err != nil {
		return gateway.Result{}, err
	}
	cctx, cancel := s.requestContext(ctx, s.timeouts.ToolCall)
	defer cancel()
	res, err := cs.ReadResource(cctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return gateway.Result{}, context.Cause(ctx)
		case errors.Is(cctx.Err(), context.DeadlineExceeded):
			return gateway.Result{}, fmt.Errorf("%w: resources/read took longer than %s", ErrTimeout, s.timeouts.ToolCall)
		}
		return gateway.Result{}, fmt.Errorf("resources/read failed: %w", err)
	}
	call := &mcp.CallToolResult{}
	for _, c := range res.Contents {
		if c != nil {
			call.Content = append(call.Content, &mcp.EmbeddedResource{Resource: c})
		}
	}
	out := resultFromMCP(capResult(call, s.opts.Limits), true) // no structured content
	out.Raw = res
	s.afterRead(cctx, cs, uri)
	return out, nil
}

// afterRead clears the updated mark of uri and subscribes to it once, if the
// server offers subscriptions.
func (s *client) afterRead(ctx context.Context, cs *mcp.ClientSession, uri string) {
	caps := offersResources(cs)
	if s.res.read(uri, caps != nil && caps.Subscribe) {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			s.log.Debug("resources/subscribe failed", "uri", uri, "err", err)
		}
	}
}

// Resources returns, in server order, what each server of the session that
// has resources offers: its resources (with their updated marks) and
// templates. Servers without resources are left out.
func (m *Manager) Resources() []ServerResources {
	m.mu.Lock()
	servers := m.servers
	m.mu.Unlock()
	var out []ServerResources
	for _, s := range servers {
		if r := s.res.snapshot(s.spec.Name); len(r.Resources)+len(r.Templates) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// route returns the server that lists uri, else the first (in server
// order) whose template matches it, else nil.
func (m *Manager) route(uri string) *client {
	m.mu.Lock()
	servers := m.servers
	m.mu.Unlock()
	var byTemplate *client
	for _, s := range servers {
		listed, matched := s.res.serves(uri)
		if listed {
			return s
		}
		if matched && byTemplate == nil {
			byTemplate = s
		}
	}
	return byTemplate
}

// ReadResource reads uri (MCP resources/read) from the server that lists it,
// or else whose resource template matches it (RFC 6570), bounded by the
// server's call timeout and counted against its rate limit; the contents
// are embedded resource blocks within Limits.MaxResultText and
// Limits.MaxMedia. It fails with ErrUnknownResource when no server serves
// uri; other errors name the server. Safe for concurrent use.
func (m *Manager) ReadResource(ctx context.Context, uri string) (gateway.Result, error) {
	s := m.route(uri)
	if s == nil {
		return gateway.Result{}, fmt.Errorf("%w: %q (/resources lists what the servers offer)", ErrUnknownResource, uri)
	}
	res, err := s.readResource(ctx, uri)
	if err != nil {
		return gateway.Result{}, fmt.Errorf("MCP server %q, resource %q: %w", s.spec.Name, uri, urlpolicy.RedactError(err))
	}
	return res, nil
}

// ResolveLinks returns content with every resource_link block whose URI a
// session server serves replaced by the resource's contents (embedded
// resource blocks, read with ReadResource), so that the model sees the
// resource itself. A link no server serves, or whose read fails (logged),
// stays a link. content is not modified; with nothing to resolve it is
// returned as is.
func (m *Manager) ResolveLinks(ctx context.Context, content []gateway.Content) []gateway.Content {
	var out []gateway.Content
	for i, c := range content {
		if c.Type != gateway.ContentResourceLink || m.route(c.URI) == nil {
			if out != nil {
				out = append(out, c)
			}
			continue
		}
		res, err := m.ReadResource(ctx, c.URI)
		if err != nil || res.IsError || len(res.Content) == 0 {
			m.opts.Logger.Warn("a resource link of the prompt could not be read; the model gets the link", "uri", c.URI, "err", err)
			if out != nil {
				out = append(out, c)
			}
			continue
		}
		if out == nil {
			out = append(make([]gateway.Content, 0, len(content)+len(res.Content)), content[:i]...)
		}
		out = append(out, res.Content...)
	}
	if out == nil {
		return content
	}
	return out
}
