// Package urlpolicy decides which URLs and addresses a session may reach
// (http and sse MCP servers, and a sign-in's OAuth requests), enforced in
// the dialer, and keeps credentials in URLs out of logs and errors.
//
// [Policy] decides which http and sse server URLs may be reached:
// [Policy.CheckURL] checks a URL before connecting, and the policy's
// dialer and redirect check ([Policy.HTTPClient]) check every address
// actually dialed, so that DNS cannot smuggle a private address past it.
// Loopback is allowed by default (a local agent's editor is on its host);
// [Policy.RefuseLoopback], for an agent whose clients are on other
// machines, refuses it too, but for the hosts of AllowHosts.
// Refusals are [*Error] values wrapping [ErrRefused]; they state the
// rule broken, name in Setting the configuration key that would lift it,
// and say so in [Error.Remedy], which the front ends show after the error's
// text (gateway.ErrorText).
//
// # Redaction
//
// [RedactURL], [RedactURLs], [RedactError] and [RedactingHandler] take
// credentials out of URLs before they reach logs or the client.
package urlpolicy
