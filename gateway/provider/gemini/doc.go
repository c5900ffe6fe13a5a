// Package gemini is the Google Gemini API model provider ([Provider], made
// by [New]), streaming generateContent through the official Go SDK
// (google.golang.org/genai) against the Gemini Developer API, or through
// [provider.Options].BaseURL any server that speaks it. Its [Capabilities]
// are images in tool results: a result's images travel as inlineData parts
// beside its functionResponse part, in the same turn.
package gemini
