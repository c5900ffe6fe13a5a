package fakemodel

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// lookback is how many block boundaries before a breakpoint Anthropic checks
// for a cache entry.
const lookback = 20

// maxPrompts is how many prompts the OpenAI cache remembers per model and
// prompt_cache_key.
const maxPrompts = 256

// blockCache is Anthropic's prompt cache: entries made at breakpoints, found
// at breakpoints and the block boundaries before them.
type blockCache struct {
	min int           // the shortest prefix cached, in tokens
	ttl time.Duration // an entry's life after its last use, unless its breakpoint says

	mu      sync.Mutex
	entries map[blockKey]blockEntry // guarded by mu; no expired entry after account
}

// blockKey identifies a cached prefix.
type blockKey struct {
	model  string
	prefix [32]byte // block.prefix of the prefix's last block
}

// blockEntry is a cached prefix's lifetime.
type blockEntry struct {
	expires time.Time     // the entry is gone from this instant on
	ttl     time.Duration // renewal: expires = last use + ttl
}

func newBlockCache(o Options) *blockCache {
	return &blockCache{min: o.MinCacheTokens, ttl: o.CacheTTL, entries: map[blockKey]blockEntry{}}
}

// account looks p up at now, makes and renews entries, and returns the input
// side of the request's usage.
func (c *blockCache) account(p *anthropicPrompt, now time.Time) Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
	key := func(i int) blockKey { return blockKey{p.model, p.blocks[i].prefix} }

	// hit is the last block of the longest prefix found, last the last
	// breakpoint; -1 if none.
	hit, last := -1, -1
	for i, b := range p.blocks {
		if !b.breakpoint {
			continue
		}
		last = i
		for j := i; j >= max(0, i-lookback); j-- {
			if _, ok := c.entries[key(j)]; ok {
				hit = max(hit, j)
				break
			}
		}
	}
	var u Usage
	if hit >= 0 {
		u.CacheReadTokens = p.blocks[hit].cum
		e := c.entries[key(hit)]
		e.expires = now.Add(e.ttl)
		c.entries[key(hit)] = e
	}
	if last > hit && p.blocks[last].cum >= c.min {
		u.CacheWriteTokens = p.blocks[last].cum - u.CacheReadTokens
	}
	for i, b := range p.blocks {
		if !b.breakpoint || b.cum < c.min {
			continue
		}
		ttl := cmp.Or(b.ttl, c.ttl)
		if e, ok := c.entries[key(i)]; !ok || now.Add(ttl).After(e.expires) {
			c.entries[key(i)] = blockEntry{expires: now.Add(ttl), ttl: ttl}
		}
	}
	u.InputTokens = p.total - u.CacheReadTokens - u.CacheWriteTokens
	return u
}

// prefixCache is OpenAI's automatic prompt cache: the longest byte prefix
// shared with a remembered prompt.
type prefixCache struct {
	min  int           // the shortest prefix cached, in tokens
	ttl  time.Duration // a prompt's life after its last use
	step int           // a hit counts in steps of this many tokens from min; 0 means 128 (OpenAI)

	mu      sync.Mutex
	prompts map[prefixBucket][]cachedPrompt // guarded by mu; each in arrival order, at most maxPrompts
}

// prefixBucket is the model and prompt_cache_key ("" if none) of prompts.
type prefixBucket struct{ model, key string }

// cachedPrompt is a remembered prompt.
type cachedPrompt struct {
	text    string
	expires time.Time // the prompt is forgotten from this instant on
}

func newPrefixCache(o Options) *prefixCache {
	return &prefixCache{min: o.MinCacheTokens, ttl: o.CacheTTL, prompts: map[prefixBucket][]cachedPrompt{}}
}

// account looks p up at now, remembers it, and returns the input side of the
// request's usage.
func (c *prefixCache) account(p *openaiPrompt, now time.Time) Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	for b, list := range c.prompts {
		list = slices.DeleteFunc(list, func(e cachedPrompt) bool { return !now.Before(e.expires) })
		if len(list) == 0 {
			delete(c.prompts, b)
		} else {
			c.prompts[b] = list
		}
	}

	var best int // bytes of the longest shared prefix
	var bestAt *cachedPrompt
	for b, list := range c.prompts {
		if b.model != p.model || (p.key != "" && b.key != "" && b.key != p.key) {
			continue
		}
		for i := range list {
			if n := commonPrefix(p.text, list[i].text); n > best {
				best, bestAt = n, &list[i]
			}
		}
	}
	cached := 0
	if t := best / 4; t >= c.min {
		step := cmp.Or(c.step, 128)
		cached = c.min + (t-c.min)/step*step
		bestAt.expires = now.Add(c.ttl)
	}

	if tokens(p.text) >= c.min {
		b := prefixBucket{p.model, p.key}
		list := slices.DeleteFunc(c.prompts[b], func(e cachedPrompt) bool { return e.text == p.text })
		list = append(list, cachedPrompt{text: p.text, expires: now.Add(c.ttl)})
		if len(list) > maxPrompts {
			list = slices.Delete(list, 0, len(list)-maxPrompts)
		}
		c.prompts[b] = list
	}
	return Usage{InputTokens: p.total - cached, CacheReadTokens: cached}
}

// commonPrefix returns the length in bytes of the longest common prefix of a
// and b.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
