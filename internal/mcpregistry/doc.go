// Package mcpregistry reads the MCP Registry (the official one at
// registry.modelcontextprotocol.io, or any registry that serves its generic
// API) and turns a server's server.json into an entry of acp-agent's config
// file: what "acp-agent mcp search" and "acp-agent mcp add" do.
//
//	c, _ := mcpregistry.NewClient(mcpregistry.DefaultURL, nil)
//	found, _ := c.Search(ctx, []string{"weather"}, nil)     // GET /v0.1/servers?search=…
//	res, _ := c.Get(ctx, "io.github.example/weather", "")   // GET /v0.1/servers/{name}/versions/latest
//	entry, _ := mcpregistry.Resolve(res.Server, mcpregistry.Choice{Env: map[string]string{"API_KEY": "…"}})
//	// entry.Command, entry.Args, entry.Env (stdio), or entry.URL, entry.Headers (http, sse)
//
// The API is the registry's OpenAPI description (docs/reference/api/openapi.yaml of
// github.com/modelcontextprotocol/registry, version 2025-12-01, the stable /v0.1 paths); the
// documents are server.json (docs/reference/server-json/server.schema.json, 2025-12-11). The
// client reads them and never writes: publishing is not its business.
//
// How a server.json becomes an entry ([Resolve]): an npm package runs as
// "npx -y identifier@version", a PyPI package as "uvx identifier==version", an
// OCI image as "docker run -i --rm -e VAR … image:tag", each followed by its
// package arguments; a remote becomes a Streamable HTTP ("http") or SSE
// ("sse") entry with its headers. Only stdio packages are started by the agent.
//
// # Errors
//
// [Client.Get] returns an error wrapping [ErrNotFound] when the registry has
// no such server or version (HTTP 404); any other answer that is not 200 is a
// [*StatusError]. [Resolve] returns a [*ResolveError] naming the server, the
// server.json field and the rule it breaks. [NewClient] refuses a registry URL
// that is not https, unless it is http on a loopback address.
//
// # Concurrency
//
// A [Client] may be used by several goroutines at once. [Resolve] is a pure
// function.
package mcpregistry
