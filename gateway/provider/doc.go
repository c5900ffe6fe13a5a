// Package provider is the code the model providers share; each provider is
// a subpackage (gateway/provider/anthropic, gateway/provider/openai,
// gateway/provider/gemini) that implements [gateway.Provider] over its
// vendor's SDK.
//
// # Options and errors
//
// [Options] configure any provider: model name, API key and the variable it
// came from, base URL, token limits, retries. A request that fails for good
// becomes an [*Error] naming the provider, the HTTP status and a hint
// ([NewError]).
//
// # Capabilities
//
// What a model API accepts is data, not code: each provider declares its
// [Capabilities] (which image types a tool result may carry, whether
// "required" must be a list), and the shared helpers read them:
//
//   - [NormalizeSchema] turns a tool's input schema into one the API takes;
//   - [DegradeResult] and [ResultText] map a tool result to what the API can
//     carry, as [ResultPart]s or text;
//   - [PromptParts] maps the user's prompt content the same way.
//
// # Adding a provider
//
// A new provider is a new subpackage: a type implementing
// [gateway.Provider], its Capabilities value, and a constructor taking
// [Options]; then one entry in cmd/acp-agent's table of models.
package provider
