package defaults

import (
	"log/slog"
	"testing"
)

// Implementation fills the empty name, version and logger, and keeps the
// ones given.
func TestImplementation(t *testing.T) {
	var name, version string
	var log *slog.Logger
	Implementation(&name, &version, &log)
	if name != Name || version != Version || log == nil {
		t.Errorf("zero values: %q %q %v, want %q %q and a logger", name, version, log, Name, Version)
	}
	mine := slog.New(slog.DiscardHandler)
	name, version, log = "editor-agent", "1.2.3", mine
	Implementation(&name, &version, &log)
	if name != "editor-agent" || version != "1.2.3" || log != mine {
		t.Errorf("given values: %q %q %v, want them kept", name, version, log)
	}
}
