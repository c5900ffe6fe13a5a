package acp

import (
	"encoding/base64"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// toACPContent maps a gateway content block to an ACP content block
// (https://agentclientprotocol.com/protocol/content): text, image, audio,
// resource_link and resource map one to one; binary data is base64-encoded.
func toACPContent(c gateway.Content) acpsdk.ContentBlock {
	switch c.Type {
	case gateway.ContentText:
		return acpsdk.TextBlock(c.Text)
	case gateway.ContentImage:
		return acpsdk.ImageBlock(base64.StdEncoding.EncodeToString(c.Data), c.MIMEType)
	case gateway.ContentAudio:
		return acpsdk.AudioBlock(base64.StdEncoding.EncodeToString(c.Data), c.MIMEType)
	case gateway.ContentResourceLink:
		name := c.Name
		if name == "" {
			name = c.URI
		}
		b := acpsdk.ResourceLinkBlock(name, c.URI)
		l := b.ResourceLink
		l.Title, l.Description, l.MimeType = optString(c.Title), optString(c.Description), optString(c.MIMEType)
		if c.Size != nil {
			l.Size = acpsdk.Ptr(int(*c.Size))
		}
		return b
	case gateway.ContentResource:
		r := c.Resource
		if r == nil {
			r = &gateway.EmbeddedResource{}
		}
		if r.Blob != nil {
			return acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{BlobResourceContents: &acpsdk.BlobResourceContents{
				Uri: r.URI, MimeType: optString(r.MIMEType), Blob: base64.StdEncoding.EncodeToString(r.Blob),
			}})
		}
		return acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{TextResourceContents: &acpsdk.TextResourceContents{
			Uri: r.URI, MimeType: optString(r.MIMEType), Text: r.Text,
		}})
	}
	return acpsdk.TextBlock(fmt.Sprintf("[content of type %q]", c.Type))
}

// fromACPContent maps a prompt content block to gateway content. Data that is
// not valid base64 is kept as a text note rather than dropped.
func fromACPContent(b acpsdk.ContentBlock) gateway.Content {
	switch {
	case b.Text != nil:
		return gateway.TextContent(b.Text.Text)
	case b.Image != nil:
		data, err := base64.StdEncoding.DecodeString(b.Image.Data)
		if err != nil {
			return gateway.TextContent(fmt.Sprintf("[image %s: invalid base64 data]", b.Image.MimeType))
		}
		return gateway.Content{Type: gateway.ContentImage, Data: data, MIMEType: b.Image.MimeType}
	case b.Audio != nil:
		data, err := base64.StdEncoding.DecodeString(b.Audio.Data)
		if err != nil {
			return gateway.TextContent(fmt.Sprintf("[audio %s: invalid base64 data]", b.Audio.MimeType))
		}
		return gateway.Content{Type: gateway.ContentAudio, Data: data, MIMEType: b.Audio.MimeType}
	case b.ResourceLink != nil:
		l := b.ResourceLink
		c := gateway.Content{Type: gateway.ContentResourceLink, URI: l.Uri, Name: l.Name,
			Title: deref(l.Title), Description: deref(l.Description), MIMEType: deref(l.MimeType)}
		if l.Size != nil {
			c.Size = acpsdk.Ptr(int64(*l.Size))
		}
		return c
	case b.Resource != nil:
		r := b.Resource.Resource
		switch {
		case r.TextResourceContents != nil:
			t := r.TextResourceContents
			return gateway.Content{Type: gateway.ContentResource, Resource: &gateway.EmbeddedResource{URI: t.Uri, MIMEType: deref(t.MimeType), Text: t.Text}}
		case r.BlobResourceContents != nil:
			bl := r.BlobResourceContents
			data, err := base64.StdEncoding.DecodeString(bl.Blob)
			if err != nil {
				return gateway.TextContent(fmt.Sprintf("[resource %s: invalid base64 blob]", bl.Uri))
			}
			return gateway.Content{Type: gateway.ContentResource, Resource: &gateway.EmbeddedResource{URI: bl.Uri, MIMEType: deref(bl.MimeType), Blob: data}}
		}
	}
	return gateway.TextContent("[empty content block]")
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
