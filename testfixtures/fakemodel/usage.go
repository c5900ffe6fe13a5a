package fakemodel

// Usage is the token accounting of one request, or the sum of several, in
// estimated tokens (see the package doc). Its fields mean the same for both
// APIs, so that they compare.
type Usage struct {
	// InputTokens is the uncached input, billed at the full price:
	// Anthropic's input_tokens; OpenAI's prompt_tokens minus cached_tokens.
	InputTokens int
	// CacheReadTokens is the input read from the prompt cache: Anthropic's
	// cache_read_input_tokens; OpenAI's prompt_tokens_details.cached_tokens.
	CacheReadTokens int
	// CacheWriteTokens is the input written to the prompt cache: Anthropic's
	// cache_creation_input_tokens; always 0 for OpenAI, which does not bill
	// cache writes.
	CacheWriteTokens int
	// OutputTokens is the turn's output: Anthropic's output_tokens; OpenAI's
	// completion_tokens.
	OutputTokens int
}

// Billed returns the cost of the input in units of the full input price:
// InputTokens + 1.25×CacheWriteTokens + 0.1×CacheReadTokens, Anthropic's
// multipliers for a 5-minute cache
// (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#pricing).
// Output is not included.
func (u Usage) Billed() float64 {
	return float64(u.InputTokens) + 1.25*float64(u.CacheWriteTokens) + 0.1*float64(u.CacheReadTokens)
}

// add returns the field-wise sum of u and v.
func (u Usage) add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
	}
}

// outputTokens estimates the tokens a turn produces.
func outputTokens(turn Turn) int {
	n := tokens(turn.Thinking) + tokens(turn.Text)
	for _, c := range turn.ToolCalls {
		n += tokens(c.Name) + tokens(c.Args)
	}
	return max(n, 1)
}

// tokens is the package's token estimate: one per 4 bytes, rounded up.
func tokens(s string) int { return (len(s) + 3) / 4 }
