package acp

import (
	"context"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"
)

// modelConfigID is the id of the session config option that selects the
// model (https://agentclientprotocol.com/protocol/session-config-options).
const modelConfigID = "model"

// configOptions returns the session's config options: the model selector,
// when there is more than one model to choose from.
func (a *Agent) configOptions(current string) []acpsdk.SessionConfigOption {
	models := a.gw.Models()
	if len(models) < 2 {
		return nil
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

// defaultModel is the ID of the model new sessions start with.
func (a *Agent) defaultModel() string {
	if ms := a.gw.Models(); len(ms) > 0 {
		return ms[0].ID
	}
	return ""
}

// SetSessionConfigOption implements acpsdk.Agent: "model" switches the
// session's model; the next turn uses it, with the same history.
func (a *Agent) SetSessionConfigOption(_ context.Context, p acpsdk.SetSessionConfigOptionRequest) (acpsdk.SetSessionConfigOptionResponse, error) {
	v := p.ValueId
	if v == nil {
		return acpsdk.SetSessionConfigOptionResponse{}, toRequestError(fmt.Errorf("%w: config option %s takes a value id", ErrInvalidParams, modelConfigID))
	}
	s, err := a.lookup(v.SessionId)
	if err != nil {
		return acpsdk.SetSessionConfigOptionResponse{}, toRequestError(err)
	}
	if v.ConfigId != modelConfigID {
		return acpsdk.SetSessionConfigOptionResponse{}, toRequestError(fmt.Errorf("%w: unknown config option %q (this agent has %q)", ErrInvalidParams, v.ConfigId, modelConfigID))
	}
	known := false
	for _, m := range a.gw.Models() {
		known = known || m.ID == string(v.Value)
	}
	if !known {
		return acpsdk.SetSessionConfigOptionResponse{}, toRequestError(fmt.Errorf("%w: unknown model %q", ErrInvalidParams, v.Value))
	}
	s.setModel(string(v.Value))
	a.log.Info("model switched", "session", s.id, "model", v.Value)
	return acpsdk.SetSessionConfigOptionResponse{ConfigOptions: a.configOptions(string(v.Value))}, nil
}
