package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// Tool search. When a session's tool definitions would take too much of the
// model's context (Options.ToolSearch), its tools are deferred: the model is
// offered the core tools (Tool.Core: the agent's built-in ones),
// [SearchToolName], and the tools loaded so far; a tool that search_tools
// returns is loaded from the next request on and stays loaded. Loaded tools
// are appended at the end of the tool list, in the order they were loaded,
// so each request's tool list begins with the previous one's and the
// prompt cache's prefix survives. Which tools are loaded is read from the
// conversation itself (search_tools results, calls made, a compaction's
// Loaded), so it survives a reload and needs no state of its own.

// SearchToolName is the runner's read-only tool that finds deferred tools.
const SearchToolName = "search_tools"

// ToolSearch says when tools are deferred behind search_tools.
type ToolSearch string

// The tool search modes.
const (
	// ToolSearchAuto defers when the tool definitions exceed
	// Options.DeferShare of the context window or Options.DeferTools
	// tools (the default).
	ToolSearchAuto ToolSearch = "auto"
	// ToolSearchOn always defers the tools that are not Core.
	ToolSearchOn ToolSearch = "on"
	// ToolSearchOff never defers: every tool is offered.
	ToolSearchOff ToolSearch = "off"
)

// Defaults of tool search.
const (
	// DefaultDeferTools: more deferrable tools than this are deferred.
	DefaultDeferTools = 50
	// DefaultDeferShare: tool definitions over this share of the context
	// window are deferred.
	DefaultDeferShare = 0.10
	// defaultSearchResults and maxSearchResults bound what one search
	// returns.
	defaultSearchResults = 3
	maxSearchResults     = 10
)

// deferring reports whether the tools of a request are deferred: all are
// the session's tools, window the model's context window (0: unknown),
// toggle the session's choice (gateway.Toggles.ToolSearch; nil: the
// configuration's).
func (r *Runner) deferring(all []*gateway.Tool, window int64, toggle *bool) bool {
	mode := r.opts.ToolSearch
	switch {
	case toggle != nil && !*toggle:
		mode = ToolSearchOff
	case toggle != nil && mode == ToolSearchOff:
		mode = ToolSearchAuto
	}
	switch mode {
	case ToolSearchOff:
		return false
	case ToolSearchOn:
		return slices.ContainsFunc(all, func(t *gateway.Tool) bool { return !t.Core })
	}
	n := 0
	var tokens int64
	for _, t := range all {
		if !t.Core {
			n++
			tokens += toolTokens(t)
		}
	}
	if n == 0 {
		return false
	}
	return n > r.opts.DeferTools || (window > 0 && float64(tokens) > r.opts.DeferShare*float64(window))
}

// loadedTools returns the names of the deferred tools the conversation has
// loaded, in the order it loaded them: the compaction's, then those that
// search_tools found or that were called, in message order.
func loadedTools(c *gateway.Compaction, msgs ...[]gateway.Message) []string {
	var out []string
	seen := map[string]bool{}
	add := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	if c != nil {
		for _, n := range c.Loaded {
			add(n)
		}
	}
	for _, ms := range msgs {
		for _, m := range ms {
			for _, call := range m.ToolCalls {
				add(call.Name)
			}
			if m.Role == gateway.RoleTool && m.ToolName == SearchToolName && m.Result != nil {
				for _, n := range foundNames(m.Result.Structured) {
					add(n)
				}
			}
		}
	}
	return out
}

// foundNames reads the "tools" list of a search_tools result's structured
// content, as made ([]string) or read back from a store ([]any).
func foundNames(structured any) []string {
	m, ok := structured.(map[string]any)
	if !ok {
		return nil
	}
	switch v := m["tools"].(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// searchTool is search_tools over the session's deferred tools (deferred
// returns them at call time).
func searchTool(deferred func() []*gateway.Tool) *gateway.Tool {
	return &gateway.Tool{
		Name:  SearchToolName,
		Label: "Search tools",
		Description: "Find tools to use. This session has more tools than are shown; search them by what you want to do " +
			"(words from a tool's name, description or parameters). The tools found are added to your tools, with their parameters, from your next step on. " +
			"limit is how many to return (default 3, at most 10).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What the tool should do, in a few words"},"limit":{"type":"integer","minimum":1,"maximum":10,"description":"How many tools to return"}},"required":["query"]}`),
		Annotations: gateway.Annotations{ReadOnlyHint: true, OpenWorldHint: new(false), DestructiveHint: new(false)},
		Kind:        gateway.ToolKindSearch,
		Core:        true,
		Execute: func(_ context.Context, _ string, args map[string]any, _ func(gateway.ToolUpdate)) (gateway.Result, error) {
			query, _ := args["query"].(string)
			if strings.TrimSpace(query) == "" {
				return gateway.ErrorResult("query is required: a few words of what the tool should do"), nil
			}
			limit := min(max(intArg(args["limit"], defaultSearchResults), 1), maxSearchResults)
			tools := deferred()
			found := rankTools(tools, query, limit)
			if len(found) == 0 {
				return gateway.Result{
					Content:    []gateway.Content{gateway.TextContent(fmt.Sprintf("No tool matches %q among %d tools; try other words.", query, len(tools)))},
					Structured: map[string]any{"tools": []string{}},
				}, nil
			}
			// The found tools' definitions (their parameters) join the
			// request's tools; the result names them, so the conversation
			// does not carry each schema twice.
			var b strings.Builder
			names := make([]string, len(found))
			fmt.Fprintf(&b, "%d tools found and added to your tools; call them from your next step on:\n", len(found))
			for i, t := range found {
				names[i] = t.Name
				fmt.Fprintf(&b, "- %s: %s\n", t.Name, summaryLine(t.Description))
			}
			return gateway.Result{Content: []gateway.Content{gateway.TextContent(b.String())}, Structured: map[string]any{"tools": names}}, nil
		},
	}
}

// summaryLine is the first sentence of a tool's description, at most 160
// bytes.
func summaryLine(desc string) string {
	desc = strings.TrimSpace(desc)
	if i := strings.IndexAny(desc, "\n"); i >= 0 {
		desc = desc[:i]
	}
	if i := strings.Index(desc, ". "); i >= 0 {
		desc = desc[:i+1]
	}
	return firstLine(desc)
}

// BM25 parameters (Robertson and Zaragoza's usual values).
const bm25K1, bm25B = 1.2, 0.75

// rankTools returns at most limit of tools that match query, best first,
// ranked by BM25 over the words of each tool's name, description and
// parameter names (the name's words count twice).
func rankTools(tools []*gateway.Tool, query string, limit int) []*gateway.Tool {
	q := words(query)
	if len(q) == 0 || len(tools) == 0 {
		return nil
	}
	docs := make([][]string, len(tools))
	df := map[string]int{}
	var total int
	for i, t := range tools {
		name := words(t.Name)
		d := slices.Concat(name, name, words(t.Label), words(t.Description), words(strings.Join(paramNames(t.InputSchema), " ")))
		docs[i] = d
		total += len(d)
		seen := map[string]bool{}
		for _, w := range d {
			if !seen[w] {
				seen[w] = true
				df[w]++
			}
		}
	}
	avg := float64(total) / float64(len(tools))
	type scored struct {
		i     int
		score float64
	}
	var hits []scored
	for i, d := range docs {
		tf := map[string]int{}
		for _, w := range d {
			tf[w]++
		}
		var s float64
		for _, w := range q {
			f := float64(tf[w])
			if f == 0 {
				continue
			}
			n := float64(df[w])
			idf := math.Log(1 + (float64(len(docs))-n+0.5)/(n+0.5))
			s += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(len(d))/avg))
		}
		if s > 0 {
			hits = append(hits, scored{i, s})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].score > hits[b].score })
	out := make([]*gateway.Tool, 0, min(limit, len(hits)))
	for _, h := range hits[:min(limit, len(hits))] {
		out = append(out, tools[h.i])
	}
	return out
}

// words splits s into lower-case words at punctuation, underscores and
// camelCase humps ("get_PullRequest" → get, pull, request).
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range s {
		switch {
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

// paramNames are the property names of a JSON Schema object, nested ones
// included.
func paramNames(schema json.RawMessage) []string {
	var s map[string]any
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	var out []string
	var walk func(v map[string]any, depth int)
	walk = func(v map[string]any, depth int) {
		props, _ := v["properties"].(map[string]any)
		for k, p := range props {
			out = append(out, k)
			if pm, ok := p.(map[string]any); ok && depth < 3 {
				walk(pm, depth+1)
			}
		}
	}
	walk(s, 0)
	sort.Strings(out)
	return out
}
