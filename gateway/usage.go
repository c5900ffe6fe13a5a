package gateway

// Usage counts the tokens of one or more model requests as the provider
// reported them, normalized to one meaning for every provider: InputTokens
// are the prompt tokens billed at the full input price (Anthropic's
// input_tokens; OpenAI's prompt_tokens less its cached_tokens), and the
// prompt's other tokens are CacheReadTokens (read from the provider's
// prompt cache) and CacheWriteTokens (written to it; Anthropic only).
// ThoughtTokens are the part of OutputTokens spent reasoning, where the
// provider says. The zero Usage is none; [Usage.Add] sums.
type Usage struct {
	InputTokens      int64 `json:"inputTokens,omitempty"`
	CacheReadTokens  int64 `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int64 `json:"cacheWriteTokens,omitempty"`
	OutputTokens     int64 `json:"outputTokens,omitempty"`
	ThoughtTokens    int64 `json:"thoughtTokens,omitempty"`
	// Requests is the number of model requests counted.
	Requests int `json:"requests,omitempty"`
	// Cost is the price of the priced requests in USD (see [Pricing]);
	// Unpriced counts the requests of a model whose prices are not known,
	// so the cost is known only when Unpriced is 0 (see [Usage.CostKnown]).
	Cost     float64 `json:"cost,omitempty"`
	Unpriced int     `json:"unpriced,omitempty"`
}

// Add returns the sum of u and o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + o.InputTokens,
		CacheReadTokens:  u.CacheReadTokens + o.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
		OutputTokens:     u.OutputTokens + o.OutputTokens,
		ThoughtTokens:    u.ThoughtTokens + o.ThoughtTokens,
		Requests:         u.Requests + o.Requests,
		Cost:             u.Cost + o.Cost,
		Unpriced:         u.Unpriced + o.Unpriced,
	}
}

// PromptTokens are all the prompt tokens, cached or not.
func (u Usage) PromptTokens() int64 { return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens }

// TotalTokens are the prompt and output tokens.
func (u Usage) TotalTokens() int64 { return u.PromptTokens() + u.OutputTokens }

// CostKnown reports whether Cost covers every request counted.
func (u Usage) CostKnown() bool { return u.Requests > 0 && u.Unpriced == 0 }

// Pricing is a model's price in USD per million tokens. A zero CacheRead
// or CacheWrite means the same as Input.
type Pricing struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead,omitempty"`
	CacheWrite float64 `json:"cacheWrite,omitempty"`
}

// Cost returns the price of u's tokens in USD.
func (p Pricing) Cost(u Usage) float64 {
	read, write := p.CacheRead, p.CacheWrite
	if read == 0 {
		read = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	return (float64(u.InputTokens)*p.Input + float64(u.CacheReadTokens)*read +
		float64(u.CacheWriteTokens)*write + float64(u.OutputTokens)*p.Output) / 1e6
}

// UsageReport is what an [EventUsage] tells at the end of a turn that asked
// a model: the turn's tokens, the session's, and how full the context is.
type UsageReport struct {
	// Turn is the usage of the turn's model requests; Session the
	// session's so far, this turn included.
	Turn, Session Usage
	// Used is the tokens in the model's context after the turn (the last
	// request's prompt and output), and Size the model's context window in
	// tokens (0 when unknown).
	Used, Size int64
}

// CompactionStatus is where a compaction is, following ACP's
// CompactionStatus (the schema's compaction_update).
type CompactionStatus string

// The statuses of a compaction. A compaction is reported in_progress when
// it starts and with each piece of its summary, then once as completed,
// failed or cancelled.
const (
	CompactionInProgress CompactionStatus = "in_progress"
	CompactionCompleted  CompactionStatus = "completed"
	CompactionFailed     CompactionStatus = "failed"
	CompactionCancelled  CompactionStatus = "cancelled"
)

// CompactionReport is what an [EventCompaction] tells of one compaction of
// the session's history for the model, at one step (Status). Every report
// of a compaction has its ID and Reason, and all but the summary's pieces
// its Before. In order:
//
//   - CompactionInProgress with Delta empty: it started; the request was
//     about Before tokens (estimated).
//   - CompactionInProgress with Delta set: a piece of the summary, as the
//     model writes it (or the whole summary at once when the model did
//     not stream it). A failed or cancelled compaction may have sent some.
//   - CompactionCompleted: the history before the compaction's From was
//     replaced for the model by Summary (the whole, trimmed: it replaces
//     the pieces), shrinking the request from Before to After tokens.
//   - CompactionFailed: Err says why; the turn goes on without it.
//   - CompactionCancelled: the turn was cancelled before the summary came.
type CompactionReport struct {
	// ID names the compaction, unique within the session.
	ID     string
	Status CompactionStatus
	// Delta is a piece of the summary of an in-progress report.
	Delta         string
	Summary       string
	Before, After int64
	// Reason is what set it off: "threshold", "too_long" (the provider
	// refused the request), "command" (/compact) or "server" (the
	// provider compacted it: gateway.ContextServerCompaction).
	Reason string
	Err    string
}
