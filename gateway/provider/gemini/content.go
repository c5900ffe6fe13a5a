package gemini

import (
	"encoding/base64"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
)

// skipSignature is the thought signature Gemini documents for a function
// call it did not make (a history written by another model, or a
// signature lost): it tells the API not to validate the call's signature
// (https://ai.google.dev/gemini-api/docs/thought-signatures).
var skipSignature = []byte("skip_thought_signature_validator")

// contents converts the history. A user message is a "user" content; an
// assistant message a "model" content (text, then function calls, the
// first carrying the message's thought signature); consecutive tool
// results are one "user" content: every functionResponse part in call
// order, then the images of the results as inlineData parts beside them.
func contents(history []gateway.Message) []*genai.Content {
	var out []*genai.Content
	var results *genai.Content // the open content of tool results, if the last one
	var images []*genai.Part   // its images, appended when it closes
	closeResults := func() {
		if results != nil {
			results.Parts = append(results.Parts, images...)
			out = append(out, results)
			results, images = nil, nil
		}
	}
	for _, m := range history {
		if m.Role != gateway.RoleTool {
			closeResults()
		}
		switch m.Role {
		case gateway.RoleUser:
			var parts []*genai.Part
			for _, p := range provider.PromptParts(m.Content) {
				if p.Image != nil {
					parts = append(parts, genai.NewPartFromBytes(p.Image, p.MIMEType))
				} else if p.Text != "" {
					parts = append(parts, genai.NewPartFromText(p.Text))
				}
			}
			if len(parts) == 0 {
				parts = append(parts, genai.NewPartFromText("(empty message)"))
			}
			out = append(out, genai.NewContentFromParts(parts, genai.RoleUser))
		case gateway.RoleAssistant:
			if c := modelContent(m); c != nil {
				out = append(out, c)
			}
		case gateway.RoleTool:
			if results == nil {
				results = &genai.Content{Role: genai.RoleUser}
			}
			fr, imgs := toolResult(m)
			results.Parts = append(results.Parts, fr)
			images = append(images, imgs...)
		}
	}
	closeResults()
	return out
}

// modelContent converts an assistant message, or returns nil for an
// empty one.
func modelContent(m gateway.Message) *genai.Content {
	var parts []*genai.Part
	if t := gateway.PromptText(m.Content); t != "" {
		parts = append(parts, genai.NewPartFromText(t))
	}
	sig := signature(m.ThinkingSignature)
	for i, c := range m.ToolCalls {
		p := &genai.Part{FunctionCall: &genai.FunctionCall{ID: c.ID, Name: c.Name, Args: c.Args}}
		if i == 0 {
			p.ThoughtSignature = sig
			if p.ThoughtSignature == nil {
				p.ThoughtSignature = skipSignature
			}
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return nil
	}
	if len(m.ToolCalls) == 0 && sig != nil {
		parts[len(parts)-1].ThoughtSignature = sig
	}
	return genai.NewContentFromParts(parts, genai.RoleModel)
}

// signature decodes a Gemini thought signature kept on a message, or
// returns nil for none or another provider's.
func signature(s string) []byte {
	enc, ok := strings.CutPrefix(s, signaturePrefix)
	if !ok {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(b) == 0 {
		return nil
	}
	return b
}

// toolResult converts a tool message to its functionResponse part (the
// result's text under "output", or "error" for a failed call, as Gemini's
// function calling guide has it) and its images as inlineData parts.
func toolResult(m gateway.Message) (*genai.Part, []*genai.Part) {
	res := m.Result
	if res == nil {
		res = &gateway.Result{}
	}
	var texts []string
	var images []*genai.Part
	for _, p := range provider.DegradeResult(Capabilities, res) {
		if p.Image != nil {
			images = append(images, genai.NewPartFromBytes(p.Image, p.MIMEType))
			texts = append(texts, fmt.Sprintf("[image %d of this result: %s, attached after the function responses]", len(images), p.MIMEType))
			continue
		}
		texts = append(texts, p.Text)
	}
	key := "output"
	if res.IsError {
		key = "error"
	}
	fr := &genai.FunctionResponse{ID: m.ToolCallID, Name: m.ToolName, Response: map[string]any{key: strings.Join(texts, "\n")}}
	return &genai.Part{FunctionResponse: fr}, images
}

// tools converts the tool definitions, their schemas normalized and given
// as parametersJsonSchema (the API's JSON Schema field, which takes what
// its OpenAPI-subset "parameters" refuses: additionalProperties, $ref,
// anyOf...).
func (g *Provider) tools(tools []*gateway.Tool) []*genai.Tool {
	if len(tools) == 0 {
		return nil
	}
	decls := make([]*genai.FunctionDeclaration, 0, len(tools))
	for _, t := range tools {
		s := provider.NormalizeSchema(Capabilities, t.Name, t.InputSchema, g.opts.Logger)
		decls = append(decls, &genai.FunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJsonSchema: s})
	}
	return []*genai.Tool{{FunctionDeclarations: decls}}
}
