package acp

import (
	"context"
	"slices"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
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
	// modeConfigID selects the session's mode (sandbox/confine): the mode
	// picker, category mode.
	modeConfigID = "mode"
)

// modeOption is the session's mode selector (category mode): the modes of
// confine.Modes, s's current.
func modeOption(s *session.Session) acpsdk.SessionConfigOption {
	opts := make(acpsdk.SessionConfigSelectOptionsUngrouped, 0, len(confine.Modes))
	for _, m := range confine.Modes {
		desc := m.Description()
		opts = append(opts, acpsdk.SessionConfigSelectOption{Value: acpsdk.SessionConfigValueId(m), Name: m.Name(), Description: &desc})
	}
	o := acpsdk.NewSessionConfigOptionSelect(acpsdk.SessionConfigValueId(s.Mode()), acpsdk.SessionConfigSelectOptions{Ungrouped: &opts})
	cat := acpsdk.SessionConfigOptionCategoryMode
	desc := "What commands and MCP servers may change, enforced by the kernel where it can"
	o.Select.Id, o.Select.Name, o.Select.Category, o.Select.Description = modeConfigID, "Mode", &cat, &desc
	return o
}

// modeState is the session's modes for clients of ACP's session modes
// (session/set_mode, current_mode_update): the same modes as modeOption.
func modeState(s *session.Session) *acpsdk.SessionModeState {
	st := &acpsdk.SessionModeState{CurrentModeId: acpsdk.SessionModeId(s.Mode())}
	for _, m := range confine.Modes {
		desc := m.Description()
		st.AvailableModes = append(st.AvailableModes, acpsdk.SessionMode{Id: acpsdk.SessionModeId(m), Name: m.Name(), Description: &desc})
	}
	return st
}

// configOptions returns session s's config options: the mode selector;
// the model selector, when there is more than one model to choose from;
// and, to a client that
// advertised session.configOptions.boolean, the on/off choices of its
// model (thinking, tool search). It is never nil (the schema of
// session/set_config_option wants an array).
func (a *Agent) configOptions(s *session.Session) []acpsdk.SessionConfigOption {
	out := []acpsdk.SessionConfigOption{modeOption(s)}
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
	if !a.client.booleanOptions.Load() {
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
	if cid == modeConfigID {
		if p.ValueId == nil {
			return fail(session.Invalidf("config option %q takes a value id (read-only, workspace-write or full-access), not a boolean", cid))
		}
		if err := a.setMode(ctx, s, string(p.ValueId.Value), true); err != nil {
			return fail(err)
		}
		return acpsdk.SetSessionConfigOptionResponse{ConfigOptions: a.configOptions(s)}, nil
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

// setMode switches session s to the mode named value (a bad one is
// invalid_params naming the valid ones) and, once the response is written,
// tells the client's other picker (current_mode_update after
// session/set_config_option, byConfig; config_option_update after
// session/set_mode) and the user what the change means: full access said
// plainly, and the stdio servers that keep their old mode.
func (a *Agent) setMode(ctx context.Context, s *session.Session, value string, byConfig bool) error {
	m, err := confine.ParseMode(value)
	if err != nil {
		return session.Invalidf("mode: %v", err)
	}
	stale, err := s.SetMode(ctx, m)
	if err != nil {
		return err
	}
	sid := s.ID()
	text := session.ModeChangedText(m, s.Support(), stale)
	a.conn.afterResponse(ctx, func(bg context.Context) { // conn.go
		if byConfig {
			a.conn.notify(bg, sid, acpsdk.SessionUpdate{CurrentModeUpdate: &acpsdk.SessionCurrentModeUpdate{SessionUpdate: "current_mode_update", CurrentModeId: acpsdk.SessionModeId(m)}})
		} else {
			a.conn.notify(bg, sid, acpsdk.SessionUpdate{ConfigOptionUpdate: &acpsdk.SessionConfigOptionUpdate{SessionUpdate: "config_option_update", ConfigOptions: a.configOptions(s)}})
		}
		a.conn.notify(bg, sid, acpsdk.UpdateAgentMessageText(text+"\n"))
	}, nil)
	return nil
}

// offeredText says which config options a session offers.
func offeredText(ids []string) string {
	if len(ids) == 0 {
		return "it offers none: a mode selector is always offered, a model selector is offered only when more than one model is configured, and thinking and tool_search only to a client that advertised session.configOptions.boolean, with a model other than direct"
	}
	return "it offers: " + strings.Join(ids, ", ")
}
