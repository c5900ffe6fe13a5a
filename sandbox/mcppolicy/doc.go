// Package mcppolicy is the managed policy of MCP servers: which servers
// an organisation lets its users' sessions start or reach, read from a file
// the users do not control (acp-agent's --managed-config, default
// /etc/acp-agent/managed.json), in the shape of Claude Code's managed
// settings.
//
// # The file
//
//	{
//	  "allowedMcpServers": [
//	    {"serverName": "github"},
//	    {"serverCommand": ["npx", "-y", "@modelcontextprotocol/server-filesystem", "**"]},
//	    {"serverUrl": "https://*.corp.example/*"}
//	  ],
//	  "deniedMcpServers": [
//	    {"serverCommand": ["npx", "*"]},
//	    {"serverUrl": "https://mcp.pastebin.example/*"}
//	  ],
//	  "tenants": {
//	    "alice": {"allowedMcpServers": [{"serverName": "linear"}], "deniedMcpServers": [{"serverName": "github"}]}
//	  }
//	}
//
// Every key is optional. Each entry of the two lists has exactly one key:
// serverName (a string, the server's name, exact), serverCommand (a
// non-empty array of strings: a stdio server's command and its arguments)
// or serverUrl (a string: an http or sse server's URL). How each matches is
// [Rule]'s documentation.
//
// # What is refused
//
// [Policy.Check] decides, for one server:
//
//  1. A server that any deniedMcpServers entry matches is refused: deny
//     wins over everything.
//  2. With no allowedMcpServers key every other server is allowed; with
//     one (even an empty list, which allows nothing) a server must match
//     one of its entries. As in Claude Code, a stdio server must match a
//     serverCommand entry when the list has any, its name alone is not
//     enough; an http or sse server must match a serverUrl entry when the
//     list has any; otherwise, and for every other transport (a server the
//     editor hosts over ACP), a serverName entry.
//
// The agent's own in-process servers (the built-in tools) are not subject
// to the policy: the caller does not ask about them.
//
// # Tenants
//
// "tenants" holds, by tenant name, lists of the same two keys for that
// tenant of a shared gateway. [Policy.ForTenant] makes a tenant's
// effective policy: the base's denied entries and the tenant's (both
// deny), and the tenant's allowedMcpServers if it defines one, else the
// base's. A tenant the file does not name gets the base policy.
//
// # Errors
//
// [Load] and [Parse] are strict: an unknown key, a value of the wrong type
// or an entry with none or two of the keys is an [*InvalidError] (wrapping
// [ErrInvalid]) naming the file, the key path and the entry's index
// (`deniedMcpServers[2]`) and the rule broken. [Policy.Check] refuses with
// a [*RefusedError] (wrapping [ErrRefused]) whose text names the server,
// the policy file and the entry or list that refused it.
//
// # Concurrency
//
// A Policy is not changed after Load, Parse or ForTenant return it: its
// methods may be called concurrently. The package performs no I/O but
// Load's read of the file.
package mcppolicy
