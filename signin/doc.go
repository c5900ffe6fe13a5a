// Package signin keeps the OAuth 2.1 grants of remote MCP servers (MCP
// "Authorization", 2025-11-25): where tokens are stored, how they are
// refreshed, and how they are revoked.
//
// # Records and stores
//
// A [Record] is one grant: the tokens one MCP server's authorization server
// issued to the agent, keyed by (ServerURL, TokenURL). A [Store] keeps them:
// [NewMemory] for --store memory, [OpenFile] for a JSON file of mode 0600 in
// the state directory, shared by every agent process of the user. Tokens never
// go to the session database, the logs (a Record prints and logs without its
// secrets), error messages or a child's environment.
//
// # Refresh
//
// [NewTokenSource] gives go-sdk's auth.AuthorizationCodeHandler (through its
// NewTokenSource and InitialTokenSource hooks) a token source that refreshes a
// token [RefreshMargin] before it expires, one refresh at a time per record:
// across goroutines, sessions of one process, and processes that share the
// token file (flock(2)). The refresh request itself is golang.org/x/oauth2's.
//
// # Revocation
//
// [Revoke] revokes a record's tokens at its authorization server (RFC 7009)
// after discovering the server's metadata with go-sdk's auth and oauthex
// packages.
package signin
