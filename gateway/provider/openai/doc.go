// Package openai is the OpenAI-compatible Chat Completions model provider
// ([Provider], made by [New]), streaming through the official Go SDK: OpenAI
// itself, or through [provider.Options].BaseURL Ollama, vLLM, llama.cpp
// server or OpenRouter. Its [Capabilities] are text-only tool results and a
// "required" that must be a list.
package openai
