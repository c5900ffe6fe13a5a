package session

import "fmt"

// NameTakenError is the error of Open when a server of the request (or a
// default server of the configuration) has the name of one of the agent's
// in-process servers (CoreOptions.InProcess), such as "acp". Its text
// states the fact; the front end adds what to do (choose another name). It
// is ErrInvalid to errors.Is.
type NameTakenError struct {
	// Name is the server name both use.
	Name string
}

// Error reads like `mcpServers: server name "acp" is taken by an in-process
// server of the agent`.
func (e *NameTakenError) Error() string {
	return fmt.Sprintf("mcpServers: server name %q is taken by an in-process server of the agent", e.Name)
}

// Is reports whether target is ErrInvalid.
func (e *NameTakenError) Is(target error) bool { return target == ErrInvalid }
