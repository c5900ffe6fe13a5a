// Package openai is the OpenAI model provider ([Provider], made by [New]),
// streaming through the official Go SDK over one of two APIs
// ([provider.Options].API): the Responses API on OpenAI's own endpoint
// (responses.go; [ResponsesCapabilities]: images inside tool results), and
// Chat Completions on any other base URL, such as Ollama, vLLM, llama.cpp
// server or OpenRouter ([Capabilities]: text-only tool messages, whose
// images follow them in a user message). Both take "required" only as a
// list.
package openai
