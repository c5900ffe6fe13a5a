// Package quota holds a session's quotas and a server's rate limit:
// [Limits] (servers, tools, result and media sizes, with their defaults),
// [TextBudget], which enforces the text quota of one tool result,
// [MediaNote] and [Size] for the notes that say what was cut, and
// [CallLimiter], a server's tool-call rate limit over x/time/rate
// ([ErrRateLimited]; a [*RateLimitError] carries the wait, which the front
// end states). It decides; it performs no I/O.
package quota
