package bridge

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxToolNameLen is the longest tool name model providers accept
// (^[a-zA-Z0-9_-]{1,64}$).
const MaxToolNameLen = 64

// hashLen is the number of hex digits of the stable suffix added to a name
// that is truncated or collides.
const hashLen = 8

// ToolRef identifies one MCP tool by its original server and tool names.
type ToolRef struct {
	Server string
	Tool   string
}

// BridgedNames returns the model-facing name of each ref, in order, following
// the rules of docs/architecture.md:
//
//   - the name is mcp__<server>__<tool>, with every character outside
//     [a-zA-Z0-9_-] replaced by '_' and an empty piece written as '_';
//   - a name longer than MaxToolNameLen is cut, and ends with '_' and a short
//     hash of the original server and tool names;
//   - names that would collide all get that hash suffix, so the result does
//     not depend on the order of refs.
//
// The names depend only on the refs, so two sessions with the same servers
// get the same names. The result has no duplicates.
func BridgedNames(refs []ToolRef) []string {
	return uniqueNames(refs, func(r ToolRef) string { return "mcp__" + sanitizePiece(r.Server) + "__" + sanitizePiece(r.Tool) })
}

// uniqueNames gives each ref the name baseName makes of it, with the hash
// suffix of BridgedNames when it is too long or collides.
func uniqueNames(refs []ToolRef, baseName func(ToolRef) string) []string {
	base := make([]string, len(refs))
	count := make(map[string]int, len(refs))
	for i, r := range refs {
		base[i] = baseName(r)
		count[base[i]]++
	}
	names := make([]string, len(refs))
	used := make(map[string]bool, len(refs))
	for i, r := range refs {
		names[i] = base[i]
		if len(base[i]) > MaxToolNameLen || count[base[i]] > 1 {
			names[i] = withHash(base[i], r, 0)
		}
		// A hashed name could, in theory, equal another name; rehash until unique.
		for salt := 1; used[names[i]]; salt++ {
			names[i] = withHash(base[i], r, salt)
		}
		used[names[i]] = true
	}
	return names
}

// sanitizePiece maps s to [a-zA-Z0-9_-]+, one '_' per other rune.
func sanitizePiece(s string) string {
	if s == "" {
		return "_"
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// withHash returns name cut to fit MaxToolNameLen with "_<hash>" appended,
// where hash is derived from ref (and salt, when non-zero).
func withHash(name string, ref ToolRef, salt int) string {
	h := sha256.New()
	h.Write([]byte(ref.Server))
	h.Write([]byte{0})
	h.Write([]byte(ref.Tool))
	for range salt {
		h.Write([]byte{0})
	}
	suffix := "_" + hex.EncodeToString(h.Sum(nil))[:hashLen]
	if max := MaxToolNameLen - len(suffix); len(name) > max {
		name = name[:max]
	}
	return name + suffix
}
