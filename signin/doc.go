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
// # Where a sign-in may go
//
// A remote MCP server names its authorization server, and that server its
// endpoints: the agent's requests go where the server says. With
// Config.URLs (urlpolicy.SignInPolicy) every request and redirect of a
// [Handler] — metadata discovery, client registration, token exchange,
// refresh and revocation — passes the URL policy as a server URL does, and
// goes no closer to the agent than the server itself: loopback only for a
// server on loopback, a private network only for a server on one, plain
// http only between loopback hosts. The endpoints an authorization server
// advertises are checked as its metadata arrives, before a client is
// registered or the user asked, and the sign-in link before it is shown.
// A refusal is an [*EndpointError] naming the server, the kind of URL, the
// URL and the rule. The OAuth flow itself is go-sdk's.
//
// # Revocation
//
// [Revoke] revokes a record's tokens at its authorization server (RFC 7009)
// after discovering the server's metadata with go-sdk's auth and oauthex
// packages.
package signin
