package session

import "fmt"

// NameTakenError is the error of Open when a server of the request (or a
// default server of the configuration) has the name of one of the agent's
// in-process servers (CoreOptions.InProcess), such as "acp". Its text
// states the fact; [NameTakenError.Remedy] says what to do. It is
// ErrInvalid to errors.Is.
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

// Remedy says what the user can do, "choose another name" (a
// [gateway.Remedier]: [gateway.ErrorText] shows it after the error's text).
func (e *NameTakenError) Remedy() string { return "choose another name" }

// BusyError is the error of a prompt turn, or of Core.Delete, when another
// holder has the session's lease (CoreOptions.Leases): a turn of the
// session is running on another replica of the fleet (Owner), or, rarely,
// on another live instance in this process. It reads "session ID is
// running a turn on OWNER"; its Remedy says what to do. Err is the leases'
// *store.LeasedError, for errors.As.
type BusyError struct {
	// ID is the session; Owner the holder of its lease, as it named itself
	// (CoreOptions.Replica of its Core).
	ID, Owner string
	// Delete is set for Core.Delete's refusal (the remedy then speaks of
	// deleting, not of prompting).
	Delete bool
	// Err is the leases' error.
	Err error
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("session %s is running a turn on %s", e.ID, e.Owner)
}

// Unwrap returns Err.
func (e *BusyError) Unwrap() error { return e.Err }

// Remedy says what the user can do (a [gateway.Remedier], shown by
// [gateway.ErrorText]): send the prompt again, or delete the session, once
// that turn ends.
func (e *BusyError) Remedy() string {
	if e.Delete {
		return "delete it once that turn ends (or cancel that turn where it runs)"
	}
	return "send the prompt again once that turn ends"
}

// LeaseLostError is the error of a prompt turn whose session lease was lost
// while it ran (store.Lease.Lost: for a PostgreSQL store, this replica's
// connection to the database broke, so another replica may run the
// session's turns): the turn was stopped (its context cancelled). What
// the turn had done is committed only if no other holder took the lease
// meanwhile (the commit is fenced). Err is the turn's own error, if it
// returned one (such as gateway.ErrTurnNotStored's).
type LeaseLostError struct {
	// ID is the session.
	ID string
	// Err is the stopped turn's error, or nil.
	Err error
}

func (e *LeaseLostError) Error() string {
	msg := fmt.Sprintf("the lease of session %s was lost (the connection to the session store that holds it broke): the turn was stopped", e.ID)
	if e.Err != nil {
		msg += " (" + e.Err.Error() + ")"
	}
	return msg
}

// Unwrap returns Err.
func (e *LeaseLostError) Unwrap() error { return e.Err }

// Remedy says what the user can do (a [gateway.Remedier], shown by
// [gateway.ErrorText]): send the prompt again once the store is reachable.
func (e *LeaseLostError) Remedy() string {
	return "send the prompt again: it runs once the session store can be reached"
}
