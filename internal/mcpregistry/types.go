package mcpregistry

// Server is a server.json document (the registry's ServerDetail): what a
// publisher says about one version of an MCP server. Fields the client does
// not use (icons, _meta) are not kept.
type Server struct {
	// Name is the server's name in reverse-DNS form with one slash,
	// "io.github.owner/name" (schema pattern ^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$).
	Name string `json:"name"`
	// Description says what the server does (at most 100 characters).
	Description string `json:"description"`
	// Title is an optional display name.
	Title string `json:"title,omitempty"`
	// Version is this version of the server, semantic versioning advised.
	Version string `json:"version"`
	// WebsiteURL is the server's home page, if any.
	WebsiteURL string `json:"websiteUrl,omitempty"`
	// Repository is where its source is, if said.
	Repository *Repository `json:"repository,omitempty"`
	// Packages are the ways to run the server locally.
	Packages []Package `json:"packages,omitempty"`
	// Remotes are the server's endpoints on the network.
	Remotes []Transport `json:"remotes,omitempty"`
}

// Repository is where a server's source code is.
type Repository struct {
	URL       string `json:"url"`
	Source    string `json:"source"`
	ID        string `json:"id,omitempty"`
	Subfolder string `json:"subfolder,omitempty"`
}

// Registry types of [Package.RegistryType] the schema defines. [Resolve]
// supports npm, pypi and oci.
const (
	RegistryNPM   = "npm"
	RegistryPyPI  = "pypi"
	RegistryOCI   = "oci"
	RegistryNuGet = "nuget"
	RegistryMCPB  = "mcpb"
)

// Package is one way to run a server locally: a package of a package
// registry and how to start it.
type Package struct {
	// RegistryType is "npm", "pypi", "oci", "nuget" or "mcpb".
	RegistryType string `json:"registryType"`
	// RegistryBaseURL is the package registry, when not the type's default
	// (https://registry.npmjs.org, https://pypi.org, docker.io).
	RegistryBaseURL string `json:"registryBaseUrl,omitempty"`
	// Identifier is the package's name ("@scope/server", "mcp-server-time"),
	// an OCI image reference ("ghcr.io/owner/image:1.0") or an MCPB URL.
	Identifier string `json:"identifier"`
	// Version is the package's exact version (never a range or "latest").
	Version string `json:"version,omitempty"`
	// FileSHA256 is the SHA-256 of an MCPB file.
	FileSHA256 string `json:"fileSha256,omitempty"`
	// RuntimeHint names the runner ("npx", "uvx", "docker", "dnx").
	RuntimeHint string `json:"runtimeHint,omitempty"`
	// Transport is how a client talks to the running package; type
	// "stdio" for the packages [Resolve] accepts.
	Transport Transport `json:"transport"`
	// RuntimeArguments go to the runner (npx, uvx, docker) before the package.
	RuntimeArguments []Argument `json:"runtimeArguments,omitempty"`
	// PackageArguments go to the package's program, after it.
	PackageArguments []Argument `json:"packageArguments,omitempty"`
	// EnvironmentVariables are the variables the package reads.
	EnvironmentVariables []KeyValueInput `json:"environmentVariables,omitempty"`
}

// Transport types of [Transport.Type].
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// Transport is a package's transport or a remote: its type ("stdio",
// "streamable-http" or "sse"), and for the last two a URL template and
// headers. Variables are a remote's values for {curly} names in URL.
type Transport struct {
	Type      string           `json:"type"`
	URL       string           `json:"url,omitempty"`
	Headers   []KeyValueInput  `json:"headers,omitempty"`
	Variables map[string]Input `json:"variables,omitempty"`
}

// Input is a value the user may be asked for: an environment variable, a
// header, an argument or a URL variable. A set Value is fixed by the
// publisher; else Default is what to use when the user gives none.
type Input struct {
	Description string `json:"description,omitempty"`
	IsRequired  bool   `json:"isRequired,omitempty"`
	IsSecret    bool   `json:"isSecret,omitempty"`
	// Format is "string" (the default), "number", "boolean" or "filepath".
	Format      string   `json:"format,omitempty"`
	Value       string   `json:"value,omitempty"`
	Default     string   `json:"default,omitempty"`
	Placeholder string   `json:"placeholder,omitempty"`
	Choices     []string `json:"choices,omitempty"`
}

// KeyValueInput is an environment variable or a header: a name and an
// [Input], whose Value may hold {curly} names of Variables.
type KeyValueInput struct {
	Name string `json:"name"`
	Input
	Variables map[string]Input `json:"variables,omitempty"`
}

// Argument types of [Argument.Type].
const (
	ArgumentPositional = "positional"
	ArgumentNamed      = "named"
)

// Argument is a command-line argument: "positional" (its value alone;
// ValueHint labels it) or "named" (Name, such as "--port", then the value).
type Argument struct {
	Type       string `json:"type"`
	Name       string `json:"name,omitempty"`
	ValueHint  string `json:"valueHint,omitempty"`
	IsRepeated bool   `json:"isRepeated,omitempty"`
	Input
	Variables map[string]Input `json:"variables,omitempty"`
}

// ServerResponse is one server in a registry's answer: the server.json and
// the registry's own metadata about it.
type ServerResponse struct {
	Server Server       `json:"server"`
	Meta   ResponseMeta `json:"_meta,omitempty"`
}

// ResponseMeta is the registry-managed _meta of a [ServerResponse].
type ResponseMeta struct {
	// Official is the official registry's metadata, under
	// "io.modelcontextprotocol.registry/official"; nil when absent.
	Official *Official `json:"io.modelcontextprotocol.registry/official,omitempty"`
}

// Official is the official registry's metadata about a server version.
// Times are RFC 3339 text as the registry sent them.
type Official struct {
	// Status is "active", "deprecated" or "deleted".
	Status      string `json:"status,omitempty"`
	PublishedAt string `json:"publishedAt,omitempty"`
	UpdatedAt   string `json:"updatedAt,omitempty"`
	IsLatest    bool   `json:"isLatest,omitempty"`
}

// ServerList is a page of GET /v0.1/servers: servers and the cursor of the
// next page (empty on the last).
type ServerList struct {
	Servers  []ServerResponse `json:"servers"`
	Metadata ListMetadata     `json:"metadata"`
}

// ListMetadata is a [ServerList]'s pagination: NextCursor, opaque, to send
// back as ?cursor= (empty: no more pages), and Count, the servers in this
// page.
type ListMetadata struct {
	NextCursor string `json:"nextCursor,omitempty"`
	Count      int    `json:"count"`
}
