package bridge

import (
	"context"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rightSizeMaps is a sending middleware that rebuilds the JSON objects
// go-sdk decoded into a result as maps of their own size: its decoder
// (segmentio/encoding) makes every map[string]any with room for 64 entries,
// about 4.75 KiB even for an empty _meta, and a session holds some results
// for as long as it lives (go-sdk's tools/list and prompts/list caches, our
// lists, a tool call's result in the history). It covers, by result type,
// the result's _meta, the _meta of its tools, prompts, resources,
// templates and content blocks, and a tool call's structuredContent. The
// values are unchanged; an empty _meta becomes nil (it is omitted either
// way). The result is still go-sdk's alone here, so it is changed in place.
func rightSizeMaps(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || res == nil {
			return res, err
		}
		// Only these types: a result's GetMeta may panic (go-sdk's empty
		// result's does).
		switch r := res.(type) {
		case *mcp.ListToolsResult:
			r.Meta = leanMeta(r.Meta)
			leanEach(r.Tools, func(t *mcp.Tool) *mcp.Meta { return &t.Meta })
		case *mcp.ListPromptsResult:
			r.Meta = leanMeta(r.Meta)
			leanEach(r.Prompts, func(p *mcp.Prompt) *mcp.Meta { return &p.Meta })
		case *mcp.ListResourcesResult:
			r.Meta = leanMeta(r.Meta)
			leanEach(r.Resources, func(x *mcp.Resource) *mcp.Meta { return &x.Meta })
		case *mcp.ListResourceTemplatesResult:
			r.Meta = leanMeta(r.Meta)
			leanEach(r.ResourceTemplates, func(x *mcp.ResourceTemplate) *mcp.Meta { return &x.Meta })
		case *mcp.CallToolResult:
			r.Meta = leanMeta(r.Meta)
			r.StructuredContent = rightSize(r.StructuredContent)
			for _, c := range r.Content {
				leanContentMeta(c)
			}
		}
		return res, err
	}
}

// leanEach right-sizes the _meta of each item of a list result that is
// not nil; meta gives an item's.
func leanEach[T any](items []*T, meta func(*T) *mcp.Meta) {
	for _, x := range items {
		if x != nil {
			m := meta(x)
			*m = leanMeta(*m)
		}
	}
}

// leanContentMeta right-sizes the _meta of a content block.
func leanContentMeta(c mcp.Content) {
	switch c := c.(type) {
	case *mcp.TextContent:
		c.Meta = leanMeta(c.Meta)
	case *mcp.ImageContent:
		c.Meta = leanMeta(c.Meta)
	case *mcp.AudioContent:
		c.Meta = leanMeta(c.Meta)
	case *mcp.ResourceLink:
		c.Meta = leanMeta(c.Meta)
	case *mcp.EmbeddedResource:
		c.Meta = leanMeta(c.Meta)
	}
}

// leanMeta is m right-sized (rightSize), nil when it is empty.
func leanMeta(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return rightSize(m).(map[string]any)
}

// rightSize returns v, a decoded JSON value, with every object rebuilt as a
// map of its size and every array clipped to its length, recursively.
func rightSize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = rightSize(e)
		}
		return m
	case []any:
		s := slices.Clip(v)
		if cap(v) > len(v) {
			s = slices.Clone(v)
		}
		for i, e := range s {
			s[i] = rightSize(e)
		}
		return s
	}
	return v
}
