package acp

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

// marshalUpdate writes what acp-go-sdk's SessionUpdate.MarshalJSON writes,
// as a JSON value, for every variant it writes itself, content blocks and
// tool call contents of every kind inside, and for those it leaves to
// acp-go-sdk; but a content block's _meta and annotations, which the
// schema has and acp-go-sdk v0.13 drops, are kept.
func TestMarshalUpdate_IsAcpGoSDKs(t *testing.T) {
	meta := map[string]any{"x": "y"}
	blocks := []acpsdk.ContentBlock{
		acpsdk.TextBlock("hi <b> & \u2028"),
		acpsdk.ImageBlock("aGk=", "image/png"),
		{Audio: &acpsdk.ContentBlockAudio{Data: "aGk=", MimeType: "audio/wav"}},
		acpsdk.ResourceLinkBlock("n", "file:///a"),
		{Resource: &acpsdk.ContentBlockResource{Resource: acpsdk.EmbeddedResourceResource{TextResourceContents: &acpsdk.TextResourceContents{Uri: "file:///a", Text: "x"}}}},
	}
	var contents []acpsdk.ToolCallContent
	for _, b := range blocks {
		contents = append(contents, acpsdk.ToolContent(b))
	}
	contents = append(contents, acpsdk.ToolDiffContent("/a", "new", "old"), acpsdk.ToolCallContent{Terminal: &acpsdk.ToolCallContentTerminal{TerminalId: "t1"}})
	status := acpsdk.ToolCallStatusCompleted
	var updates []acpsdk.SessionUpdate
	for _, b := range blocks {
		updates = append(updates,
			acpsdk.SessionUpdate{AgentMessageChunk: &acpsdk.SessionUpdateAgentMessageChunk{Content: b, MessageId: acpsdk.Ptr("m")}},
			acpsdk.SessionUpdate{AgentThoughtChunk: &acpsdk.SessionUpdateAgentThoughtChunk{Content: b}},
			acpsdk.SessionUpdate{UserMessageChunk: &acpsdk.SessionUpdateUserMessageChunk{Content: b, Meta: meta}})
	}
	updates = append(updates,
		acpsdk.SessionUpdate{ToolCall: &acpsdk.SessionUpdateToolCall{ToolCallId: "c", Title: "T", Kind: acpsdk.ToolKindRead, Status: acpsdk.ToolCallStatusInProgress,
			Content: contents, RawInput: map[string]any{"message": "hi", "n": 1.5}, Locations: []acpsdk.ToolCallLocation{{Path: "/a", Line: acpsdk.Ptr(3)}}}},
		acpsdk.SessionUpdate{ToolCall: &acpsdk.SessionUpdateToolCall{ToolCallId: "c", Title: "T"}},
		acpsdk.SessionUpdate{ToolCallUpdate: &acpsdk.SessionToolCallUpdate{ToolCallId: "c", Status: &status, Content: contents, RawOutput: map[string]any{"content": []any{}}}},
		acpsdk.SessionUpdate{ToolCallUpdate: &acpsdk.SessionToolCallUpdate{ToolCallId: "c", Content: []acpsdk.ToolCallContent{}}},
		acpsdk.SessionUpdate{SessionInfoUpdate: &acpsdk.SessionSessionInfoUpdate{UpdatedAt: acpsdk.Ptr("2026-11-29T00:00:00Z"), Title: acpsdk.Ptr("t")}},
		acpsdk.SessionUpdate{UsageUpdate: &acpsdk.SessionUsageUpdate{Size: 200000, Used: 1234, Cost: &acpsdk.Cost{Amount: 0.25, Currency: "USD"}}},
		acpsdk.SessionUpdate{CurrentModeUpdate: &acpsdk.SessionCurrentModeUpdate{CurrentModeId: "read-only"}},
		acpsdk.SessionUpdate{Plan: &acpsdk.SessionUpdatePlan{Entries: []acpsdk.PlanEntry{{Content: "a", Priority: acpsdk.PlanEntryPriorityHigh, Status: acpsdk.PlanEntryStatusPending}}}},
		acpsdk.SessionUpdate{AvailableCommandsUpdate: &acpsdk.SessionAvailableCommandsUpdate{AvailableCommands: []acpsdk.AvailableCommand{{Name: "c", Description: "d"}}}},
	)
	for i, u := range updates {
		want, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, err := marshalUpdate(u, "")
		if err != nil {
			t.Fatal(err)
		}
		var w, g any
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("update %d: %v in %s", i, err, got)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("update %d:\n got %s\nwant %s", i, got, want)
		}
	}
	annotated := acpsdk.ContentBlock{Text: &acpsdk.ContentBlockText{Text: "t", Meta: meta, Annotations: &acpsdk.Annotations{Priority: acpsdk.Ptr(0.5)}}}
	got, err := marshalUpdate(acpsdk.SessionUpdate{AgentMessageChunk: &acpsdk.SessionUpdateAgentMessageChunk{Content: annotated}}, "")
	if want := `{"content":{"_meta":{"x":"y"},"annotations":{"priority":0.5},"text":"t","type":"text"},"sessionUpdate":"agent_message_chunk"}`; err != nil || string(got) != want {
		t.Errorf("an annotated block: %s, %v; want %s", got, err, want)
	}
	// A tool_call with its name: acp-go-sdk's, with "name" beside.
	got, err = marshalUpdate(updates[len(blocks)*3], "mcp__s__t")
	var g map[string]any
	if err != nil || json.Unmarshal(got, &g) != nil || g["name"] != "mcp__s__t" || g["sessionUpdate"] != "tool_call" {
		t.Errorf("tool_call with a name: %s, %v", got, err)
	}
}

// The structs marshalUpdate writes in acp-go-sdk's stead have acp-go-sdk's
// members, in its order: a member a newer acp-go-sdk adds fails here
// rather than going missing from what the agent sends.
func TestMarshalUpdate_MirrorsAcpGoSDK(t *testing.T) {
	members := func(v any) []string {
		var out []string
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			out = append(out, typ.Field(i).Tag.Get("json"))
		}
		return out
	}
	for _, c := range []struct {
		ours, sdks any
		added      string
	}{
		{chunkJSON{}, acpsdk.SessionUpdateAgentMessageChunk{}, ""},
		{chunkJSON{}, acpsdk.SessionUpdateAgentThoughtChunk{}, ""},
		{chunkJSON{}, acpsdk.SessionUpdateUserMessageChunk{}, ""},
		{toolCallJSON{}, acpsdk.SessionUpdateToolCall{}, "name,omitempty"},
		{toolCallUpdateJSON{}, acpsdk.SessionToolCallUpdate{}, ""},
	} {
		want := members(c.sdks)
		if c.added != "" {
			want = append(want, c.added)
		}
		if got := members(c.ours); !slices.Equal(got, want) {
			t.Errorf("%T: members %q, acp-go-sdk's %T %q", c.ours, got, c.sdks, want)
		}
	}
	// The unions' plain structs have every member of every variant, sorted.
	names := func(vs ...any) []string {
		var out []string
		for _, v := range vs {
			for _, m := range members(v) {
				if name, _, _ := strings.Cut(m, ","); !slices.Contains(out, name) {
					out = append(out, name)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		ours     any
		variants []any
	}{
		{contentBlockJSON{}, []any{acpsdk.ContentBlockText{}, acpsdk.ContentBlockImage{}, acpsdk.ContentBlockAudio{}, acpsdk.ContentBlockResourceLink{}, acpsdk.ContentBlockResource{}}},
		{toolCallContentJSON{}, []any{acpsdk.ToolCallContentContent{}, acpsdk.ToolCallContentDiff{}, acpsdk.ToolCallContentTerminal{}}},
	} {
		var got []string // in declaration order
		for _, m := range members(c.ours) {
			name, _, _ := strings.Cut(m, ",")
			got = append(got, name)
		}
		if want := names(c.variants...); !slices.Equal(got, want) {
			t.Errorf("%T: members %q, acp-go-sdk's variants %q", c.ours, got, want)
		}
	}
}
