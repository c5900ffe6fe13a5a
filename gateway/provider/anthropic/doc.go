// Package anthropic is the Anthropic Messages API model provider
// ([Provider], made by [New]), streaming through the official Go SDK, with
// extended thinking when [provider.Options].ThinkingBudget is set. Its
// [Capabilities] let tool results carry PNG, JPEG, GIF and WebP images.
package anthropic
