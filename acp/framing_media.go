package acp

import (
	"encoding/base64"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/sandbox/quota"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// checkPromptMedia refuses a prompt with an image, audio or embedded blob
// block of more than max decoded bytes (config limits.maxMediaBytes; zero
// means the default), with an ErrInvalidParams error naming the block, its
// size and the limit.
func checkPromptMedia(prompt []acpsdk.ContentBlock, max int) error {
	if max <= 0 {
		max = quota.DefaultMaxMedia
	}
	for i, b := range prompt {
		var kind, mime, data string
		switch {
		case b.Image != nil:
			kind, mime, data = "image", b.Image.MimeType, b.Image.Data
		case b.Audio != nil:
			kind, mime, data = "audio", b.Audio.MimeType, b.Audio.Data
		case b.Resource != nil && b.Resource.Resource.BlobResourceContents != nil:
			bl := b.Resource.Resource.BlobResourceContents
			kind, mime, data = "resource "+bl.Uri, deref(bl.MimeType), bl.Blob
		default:
			continue
		}
		if n := base64Size(data); n > max {
			return session.Invalidf("prompt[%d]: the %s (%s) is %s (%d bytes), over the limit of %s (%d bytes) per image, audio or blob block (config limits.maxMediaBytes): send it smaller, or as a resource_link", i, kind, mime, quota.Size(n), n, quota.Size(max), max)
		}
	}
	return nil
}

// base64Size is the number of bytes that the standard base64 text s decodes
// to (about, if s is not valid base64).
func base64Size(s string) int {
	n := base64.StdEncoding.DecodedLen(len(s))
	switch {
	case strings.HasSuffix(s, "=="):
		n -= 2
	case strings.HasSuffix(s, "="):
		n--
	}
	return n
}
