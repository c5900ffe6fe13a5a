package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/sandbox/quota"
)

// textResource serves text for any URI it is asked for.
func textResource(text string) mcp.ResourceHandler {
	return func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text + " " + req.Params.URI}}}, nil
	}
}

// resourceServer returns an in-process server with n resources
// mem://<name>/r<i>, the template mem://<name>/t/{id}, pages of 2 items and
// resource subscriptions.
func resourceServer(name string, n int) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{
		PageSize:           2,
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	for i := range n {
		srv.AddResource(&mcp.Resource{URI: fmt.Sprintf("mem://%s/r%d", name, i), Name: fmt.Sprintf("r%d", i), MIMEType: "text/plain", Size: int64(10 + i)},
			textResource(name+" listed"))
	}
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "mem://" + name + "/t/{id}", Name: "by id", MIMEType: "text/plain"}, textResource(name+" templated"))
	return srv
}

func stdioSpec(name string) ServerSpec { return ServerSpec{Name: name, Transport: TransportStdio} }

func TestResources_ListedWithPaginationAndTemplates(t *testing.T) {
	m := memManager(t, nil, map[string]*mcp.Server{"a": resourceServer("a", 5), "plain": testServer(t)}, stdioSpec("a"), stdioSpec("plain"))
	got := m.Resources()
	if len(got) != 1 || got[0].Server != "a" {
		t.Fatalf("Resources() = %+v, want only server a (plain has none)", got)
	}
	if len(got[0].Resources) != 5 {
		t.Fatalf("%d resources over pages of 2, want 5: %+v", len(got[0].Resources), got[0].Resources)
	}
	if r := got[0].Resources[4]; r.URI != "mem://a/r4" || r.Name != "r4" || r.MIMEType != "text/plain" || r.Size != 14 {
		t.Errorf("resource 4 = %+v", r)
	}
	if tpl := got[0].Templates; len(tpl) != 1 || tpl[0].URITemplate != "mem://a/t/{id}" || tpl[0].Name != "by id" {
		t.Errorf("templates = %+v", tpl)
	}
}

func TestResources_ListingIsBounded(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "1"}, &mcp.ServerOptions{PageSize: 400})
	for i := range MaxResourcesPerServer + 5 {
		srv.AddResource(&mcp.Resource{URI: fmt.Sprintf("mem://many/%05d", i), Name: "x"}, textResource("x"))
	}
	m := memManager(t, nil, map[string]*mcp.Server{"many": srv}, stdioSpec("many"))
	if got := m.Resources(); len(got) != 1 || len(got[0].Resources) != MaxResourcesPerServer {
		t.Fatalf("kept %d resources, want the bound %d", len(got[0].Resources), MaxResourcesPerServer)
	}
}

// A server whose resources/list fails stays connected with its tools.
func TestResources_ListFailureKeepsTheServer(t *testing.T) {
	srv := testServer(t)
	srv.AddResource(&mcp.Resource{URI: "mem://x", Name: "x"}, textResource("x"))
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "resources/list" {
				return nil, errors.New("listing is broken")
			}
			return next(ctx, method, req)
		}
	})
	m := memManager(t, nil, map[string]*mcp.Server{"mem": srv}, stdioSpec("mem"))
	if st := m.Servers()[0]; st.State != StateConnected || st.Tools == 0 {
		t.Fatalf("server after a failed resources/list: %+v", st)
	}
	if got := m.Resources(); len(got) != 0 {
		t.Errorf("Resources() = %+v, want none", got)
	}
}

func TestResources_ReadRoutesByListingThenTemplate(t *testing.T) {
	a := resourceServer("a", 1)
	// b has a template that also matches a's listed resource: the listing wins.
	b := resourceServer("b", 0)
	b.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "mem://a/{x}", Name: "greedy"}, textResource("b greedy"))
	m := memManager(t, nil, map[string]*mcp.Server{"b": b, "a": a}, stdioSpec("b"), stdioSpec("a"))
	for uri, want := range map[string]string{
		"mem://a/r0":   "a listed mem://a/r0",
		"mem://a/t/42": "a templated mem://a/t/42",
		"mem://b/t/7":  "b templated mem://b/t/7",
		"mem://a/zz":   "b greedy mem://a/zz",
	} {
		res, err := m.ReadResource(t.Context(), uri)
		if err != nil {
			t.Errorf("read %s: %v", uri, err)
			continue
		}
		if len(res.Content) != 1 || res.Content[0].Type != gateway.ContentResource || res.Content[0].Resource.Text != want || res.Content[0].Resource.URI != uri {
			t.Errorf("read %s = %+v, want the text %q", uri, res.Content, want)
		}
	}
	if _, err := m.ReadResource(t.Context(), "mem://c/nothing"); !errors.Is(err, ErrUnknownResource) || !strings.Contains(err.Error(), "mem://c/nothing") {
		t.Errorf("unserved URI: %v, want ErrUnknownResource naming it", err)
	}
}

func TestResources_ReadObeysLimitsAndRate(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
	srv.AddResource(&mcp.Resource{URI: "mem://big", Name: "big"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
			{URI: "mem://big", MIMEType: "text/plain", Text: strings.Repeat("a", 3000)},
			{URI: "mem://big#blob", MIMEType: "application/octet-stream", Blob: make([]byte, 5000)},
		}}, nil
	})
	now := time.Unix(1000, 0)
	m := memManager(t, &Options{Limits: quota.Limits{MaxResultText: 1000, MaxMedia: 4000}, CallsPerMinute: 1, Clock: func() time.Time { return now }},
		map[string]*mcp.Server{"big": srv}, stdioSpec("big"))
	res, err := m.ReadResource(t.Context(), "mem://big")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 3 || len(res.Content[0].Resource.Text) != 1000 ||
		!strings.Contains(res.Content[1].Text, "5000 B") && !strings.Contains(res.Content[1].Text, "4.9 KiB") ||
		!strings.Contains(res.Content[2].Text, "cut") {
		t.Errorf("capped read: %+v", res.Content)
	}
	if _, err := m.ReadResource(t.Context(), "mem://big"); err == nil || !strings.Contains(err.Error(), "rate limit") {
		t.Errorf("second read in the minute: %v, want the server's rate limit", err)
	}
}

// TestResources_ListChangedAndUpdatedRefresh runs in a synctest bubble:
// go-sdk sends list_changed after a delay of the fake clock, and
// synctest.Wait returns once the Manager has handled what came in.
func TestResources_ListChangedAndUpdatedRefresh(t *testing.T) {
	synctest.Test(t, testResourcesListChangedAndUpdatedRefresh)
}

func testResourcesListChangedAndUpdatedRefresh(t *testing.T) {
	srv := resourceServer("a", 1)
	m := memManager(t, nil, map[string]*mcp.Server{"a": srv}, stdioSpec("a"))
	srv.AddResource(&mcp.Resource{URI: "mem://a/late", Name: "late"}, textResource("late"))
	time.Sleep(time.Second) // the fake clock, past go-sdk's delay of list_changed
	synctest.Wait()
	if r := m.Resources(); len(r) != 1 || len(r[0].Resources) != 2 {
		t.Fatalf("the resource added after connect is not listed: %+v", r)
	}

	if _, err := m.ReadResource(t.Context(), "mem://a/r0"); err != nil { // subscribes
		t.Fatal(err)
	}
	updated := func() bool {
		for _, r := range m.Resources()[0].Resources {
			if r.URI == "mem://a/r0" {
				return r.Updated
			}
		}
		return false
	}
	// The subscription may reach the server after the read returns.
	synctest.Wait()
	_ = srv.ResourceUpdated(t.Context(), &mcp.ResourceUpdatedNotificationParams{URI: "mem://a/r0"})
	synctest.Wait()
	if !updated() {
		t.Fatal("resources/updated did not mark the resource")
	}
	if _, err := m.ReadResource(t.Context(), "mem://a/r0"); err != nil {
		t.Fatal(err)
	}
	if updated() {
		t.Error("reading the resource did not clear its updated mark")
	}
}

func TestResources_ToolsForServersWithResources(t *testing.T) {
	own := resourceServer("own", 1)
	// A server tool of the same name keeps its name; ours moves aside. Its
	// _meta cannot make it pass for ours.
	own.AddTool(&mcp.Tool{Name: "read_resource", InputSchema: json.RawMessage(`{"type":"object"}`), Meta: mcp.Meta{metaResourceTool: "read_resource"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the server's own"}}}, nil
	})
	late := mcp.NewServer(&mcp.Implementation{Name: "late", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Resources: &mcp.ResourceCapabilities{ListChanged: true}}})
	changed := make(chan []*gateway.Tool, 10)
	m := memManager(t, &Options{OnToolsChanged: func(tools []*gateway.Tool) { changed <- tools }},
		map[string]*mcp.Server{"own": own, "plain": testServer(t), "late": late}, stdioSpec("own"), stdioSpec("plain"), stdioSpec("late"))
	names := map[string]bool{}
	for _, tool := range m.Tools() {
		names[tool.Name] = true
	}
	for _, n := range []string{"mcp__own__list_resources", "mcp__own__acp-agent_read_resource", "mcp__own__read_resource"} {
		if !names[n] {
			t.Errorf("no tool %s", n)
		}
	}
	for n := range names {
		if strings.HasPrefix(n, "mcp__plain__") && strings.Contains(n, "resource") || strings.HasPrefix(n, "mcp__late__") {
			t.Errorf("tool %s for a server without resources", n)
		}
	}

	list := toolByName(t, m, "mcp__own__list_resources")
	if list.Kind != gateway.ToolKindRead || !list.Annotations.ReadOnlyHint || list.Group != "own" {
		t.Errorf("list_resources metadata: kind %q, annotations %+v, group %q", list.Kind, list.Annotations, list.Group)
	}
	res, err := list.Execute(t.Context(), "c1", map[string]any{}, nil)
	if err != nil || res.IsError || !strings.Contains(res.Content[0].Text, "mem://own/r0") || !strings.Contains(res.Content[0].Text, "mem://own/t/{id}") {
		t.Errorf("list_resources = %+v, %v", res, err)
	}
	read := toolByName(t, m, "mcp__own__acp-agent_read_resource")
	res, err = read.Execute(t.Context(), "c2", map[string]any{"uri": "mem://own/t/9"}, nil)
	if err != nil || res.IsError || res.Content[0].Resource == nil || res.Content[0].Resource.Text != "own templated mem://own/t/9" {
		t.Errorf("read_resource = %+v, %v", res, err)
	}
	res, err = read.Execute(t.Context(), "c3", map[string]any{"uri": "mem://own/nope"}, nil)
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].Text, `resource "mem://own/nope"`) {
		t.Errorf("read_resource of an unknown URI = %+v, %v; want a tool error naming it", res, err)
	}
	res, err = read.Execute(t.Context(), "c4", map[string]any{}, nil)
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].Text, `"uri"`) {
		t.Errorf("read_resource without uri = %+v, %v", res, err)
	}
	if res, _ := toolByName(t, m, "mcp__own__read_resource").Execute(t.Context(), "c5", nil, nil); res.Content[0].Text != "the server's own" {
		t.Errorf("the server's own read_resource = %+v", res)
	}

	// A server that gains its first resource gets the tools.
	late.AddResource(&mcp.Resource{URI: "mem://late/1", Name: "one"}, textResource("late"))
	deadline := time.After(10 * time.Second)
	for {
		select {
		case tools := <-changed:
			for _, tool := range tools {
				if tool.Name == "mcp__late__read_resource" {
					return
				}
			}
		case <-deadline:
			t.Fatal("no resource tools after the server's first resource appeared")
		}
	}
}

// The resource tools count against the session's tool limit like any tool.
func TestResources_ToolsCountAgainstTheLimit(t *testing.T) {
	m := memManager(t, &Options{Limits: quota.Limits{ToolsPerSession: 1}},
		map[string]*mcp.Server{"a": resourceServer("a", 1)}, stdioSpec("a"))
	if st := m.Servers()[0]; len(m.Tools()) != 1 || st.LeftOutCount != 1 || st.LeftOut[0] != "read_resource" {
		t.Errorf("%d tools, status %+v; want list_resources bridged and read_resource left out", len(m.Tools()), st)
	}
}

func TestManager_ResolveLinks(t *testing.T) {
	m := memManager(t, nil, map[string]*mcp.Server{"a": resourceServer("a", 1)}, stdioSpec("a"))
	in := []gateway.Content{
		gateway.TextContent("look at"),
		{Type: gateway.ContentResourceLink, URI: "mem://a/r0", Name: "r0"},
		{Type: gateway.ContentResourceLink, URI: "https://example.com/x", Name: "x"},
		{Type: gateway.ContentResourceLink, URI: "mem://a/t/5", Name: "t5"},
	}
	out := m.ResolveLinks(t.Context(), in)
	if len(out) != 4 || out[0].Text != "look at" ||
		out[1].Type != gateway.ContentResource || out[1].Resource.Text != "a listed mem://a/r0" ||
		out[2].Type != gateway.ContentResourceLink || out[2].URI != "https://example.com/x" ||
		out[3].Type != gateway.ContentResource || out[3].Resource.Text != "a templated mem://a/t/5" {
		t.Errorf("resolved = %+v", out)
	}
	if in[1].Type != gateway.ContentResourceLink {
		t.Error("ResolveLinks modified its input")
	}
	plain := []gateway.Content{gateway.TextContent("hi")}
	if out := m.ResolveLinks(t.Context(), plain); &out[0] != &plain[0] {
		t.Error("content without links was copied")
	}
}
