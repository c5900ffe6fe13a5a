package acp

import (
	"context"
	"slices"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/session"
)

// modelConfigID is the id of the session config option that selects the
// model (https://agentclientprotocol.com/protocol/session-config-options).
const modelConfigID = "model"

// configOptions returns the session's config options: the model selector,
// when there is more than one model to choose from. It is never nil (the
// schema of session/set_config_option wants an array).
func (a *Agent) configOptions(current string) []acpsdk.SessionConfigOption {
	models := a.core.Models()
	if len(models) < 2 {
		return []acpsdk.SessionConfigOption{}
	}
	opts := make(acpsdk.SessionConfigSelectOptionsUngrouped, 0, len(models))
	for _, m := range models {
		opts = append(opts, acpsdk.SessionConfigSelectOption{Value: acpsdk.SessionConfigValueId(m.ID), Name: m.Label})
	}
	o := acpsdk.NewSessionConfigOptionSelect(acpsdk.SessionConfigValueId(current), acpsdk.SessionConfigSelectOptions{Ungrouped: &opts})
	cat := acpsdk.SessionConfigOptionCategoryModel
	desc := "The model that runs this session's turns"
	o.Select.Id, o.Select.Name, o.Select.Category, o.Select.Description = modelConfigID, "Model", &cat, &desc
	return []acpsdk.SessionConfigOption{o}
}

// setSessionConfigOption serves session/set_config_option
// (https://agentclientprotocol.com/protocol/session-config-options):
// "model", offered when more than one model is configured, switches the
// session's model; the next turn uses it, with the same history, and the
// choice is stored with the session (session/load and session/resume
// restore it). An option the session does not offer, or a value it does not
// list, is invalid_params naming it.
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
	for _, o := range a.configOptions(s.Model()) {
		if o.Select != nil {
			offered = append(offered, string(o.Select.Id))
		}
	}
	if !slices.Contains(offered, string(cid)) {
		return fail(session.Invalidf("configId %q is not an option of this session (%s)", cid, offeredText(offered)))
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
	return acpsdk.SetSessionConfigOptionResponse{ConfigOptions: a.configOptions(model)}, nil
}

// offeredText says which config options a session offers.
func offeredText(ids []string) string {
	if len(ids) == 0 {
		return "it offers none: a model selector is offered only when more than one model is configured"
	}
	return "it offers: " + strings.Join(ids, ", ")
}
