module github.com/seed02d3eb6b/acp-agent

go 1.26.8

require (
	github.com/coder/acp-go-sdk v0.13.0
	github.com/modelcontextprotocol/go-sdk v1.8.0
	go.uber.org/zap v1.28.0
	go.uber.org/zap/exp v0.3.0
	golang.org/x/sync v0.24.0
	golang.org/x/time v0.16.0
)

require (
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/sys v0.41.0 // indirect
)
