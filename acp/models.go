package acp

import (
	"context"
	"slices"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// The ids of the session config options
// (https://agentclientprotocol.com/protocol/session-config-options).
const (
	// modelConfigID selects the model, when there is more than one.
	modelConfigID = "model"
	// thinkingConfigID turns the model's extended thinking on or off
	// (boolean), for a model that can think.
	thinkingConfigID = "thinking"
	// toolSearchConfigID turns tool search on or off (boolean), for any
	// model but direct.
	toolSearchConfigID = "tool_search"
)

// configOptions returns session s's config options: the model selector,
// when there is more than one model to choose from; and, to a client that
// advertised session.configOptions.boolean, the on/off choices of its
// model (thinking, tool search). It is never nil (the schema of
// session/set_config_option wants an array).
func (a *Agent) configOptions(s *session.Session) []acpsdk.SessionConfigOption {
	out := []acpsdk.SessionConfigOption{}
	current := s.Model()
	models := a.core.Models()
	if len(models) > 1 {
		opts := make(acpsdk.SessionConfigSelectOptionsUngrouped, 0, len(models))
		for _, m := range models {
			opts = append(opts, acpsdk.SessionConfigSelectOption{Value: acpsdk.SessionConfigValueId(m.ID), Name: m.Label})
		}
		o := acpsdk.NewSessionConfigOptionSelect(acpsdk.SessionConfigValueId(current), acpsdk.SessionConfigSelectOptions{Ungrouped: &opts})
		cat := acpsdk.SessionConfigOptionCategoryModel
		desc := "The model that runs this session's turns"
		o.Select.Id, o.Select.Name, o.Select.Category, o.Select.Description = modelConfigID, "Model", &cat, &desc
		out = append(out, o)
	}
	if !a.booleanOptions.Load() {
		return out
	}
	i := slices.IndexFunc(models, func(m gateway.ModelInfo) bool { return m.ID == current })
	if i < 0 || current == runner.DirectModelID {
		return out
	}
	m, t := models[i], s.Toggles()
	if m.Thinking {
		out = append(out, booleanOption(thinkingConfigID, "Extended thinking", acpsdk.SessionConfigOptionCategoryThoughtLevel,
			"The model thinks step by step before it answers: better on hard tasks, more output tokens",
			orDefault(t.Thinking, m.ThinkingOn)))
	}
	out = append(out, booleanOption(toolSearchConfigID, "Tool search", "",
		"When the session has many tools, the model gets a search_tools tool and finds the ones it needs, instead of every definition in its context",
		orDefault(t.ToolSearch, m.ToolSearch)))
	return out
}

// booleanOption is a boolean config option (the schema's
// SessionConfigBoolean); cat "" leaves the category out.
func booleanOption(id, name string, cat acpsdk.SessionConfigOptionCategory, desc string, value bool) acpsdk.SessionConfigOption {
	o := &acpsdk.SessionConfigOptionBoolean{Type: "boolean", Id: acpsdk.SessionConfigId(id), Name: name, Description: &desc, CurrentValue: value}
	if cat != "" {
		o.Category = &cat
	}
	return acpsdk.SessionConfigOption{Boolean: o}
}

// orDefault is *b, or def when b is nil.
func orDefault(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// setSessionConfigOption serves session/set_config_option
// (https://agentclientprotocol.com/protocol/session-config-options):
// "model", offered when more than one model is configured, switches the
// session's model; the next turn uses it, with the same history, and the
// choice is stored with the session (session/load and session/resume
// restore it). "thinking" and "tool_search", offered as booleans to a
// client that takes them, set the session's toggles for its next turns
// (not stored: a reopened session starts with the configuration's). An
// option the session does not offer, or a value of the wrong kind or not
// listed, is invalid_params naming it.
func (a *Agent) setSessionConfigOption(ctx context.Context, p acpsdk.SetSessionConfigOptionRequest) (acpsdk.SetSessionConfigOptionResponse, error) {
	fail := func(err error) (acpsdk.SetSessionConfigOptionResponse, error) {
		return acpsdk.SetSessionConfigOptionResponse{}, toRequestError(err)
	}
	var sid acpsdk.SessionId
	var cid acpsdk.SessionConfigId
	switch {
	case p.ValueId != nil:
		sid, cid = p.ValueId.SessionId, p.ValueId.ConfigId
	case p.Boolean != nil:
		sid, cid = p.Boolean.SessionId, p.Boolean.ConfigId
	default:
		return fail(session.Invalidf("session/set_config_option needs a configId, a sessionId and a value"))
	}
	s, err := a.lookup(sid)
	if err != nil {
		return fail(err)
	}
	var offered []string
	for _, o := range a.configOptions(s) {
		switch {
		case o.Select != nil:
			offered = append(offered, string(o.Select.Id))
		case o.Boolean != nil:
			offered = append(offered, string(o.Boolean.Id))
		}
	}
	if !slices.Contains(offered, string(cid)) {
		return fail(session.Invalidf("configId %q is not an option of this session (%s)", cid, offeredText(offered)))
	}
	if cid != modelConfigID {
		if p.Boolean == nil {
			return fail(session.Invalidf("config option %q is a boolean: it takes type \"boolean\" and a true or false value", cid))
		}
		t, v := s.Toggles(), p.Boolean.Value
		if cid == thinkingConfigID {
			t.Thinking = &v
		} else {
			t.ToolSearch = &v
		}
		s.SetToggles(t)
		return acpsdk.SetSessionConfigOptionResponse{ConfigOptions: a.configOptions(s)}, nil
	}
	if p.ValueId == nil {
		return fail(session.Invalidf("config option %q takes a value id (a model id), not a boolean", cid))
	}
	model := string(p.ValueId.Value)
	if ids := a.core.ModelIDs(); !slices.Contains(ids, model) {
		return fail(session.Invalidf("config option %q: unknown model %q (the models are: %s)", cid, model, strings.Join(ids, ", ")))
	}
	if err := s.SetModel(ctx, model); err != nil {
		return fail(err)
	}
	return acpsdk.SetSessionConfigOptionResponse{ConfigOptions: a.configOptions(s)}, nil
}

// offeredText says which config options a session offers.
func offeredText(ids []string) string {
	if len(ids) == 0 {
		return "it offers none: a model selector is offered only when more than one model is configured, and thinking and tool_search only to a client that advertised session.configOptions.boolean, with a model other than direct"
	}
	return "it offers: " + strings.Join(ids, ", ")
}
