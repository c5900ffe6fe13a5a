// Package store is what acp-agent keeps of its sessions across restarts:
// the [Store] interface, what it stores (a session's [Record] and its
// committed [Turn]s), and the [Leases] that let one holder at a time run a
// session's turn, with the fencing ([FencedStore]) that keeps a holder that
// lost its lease from writing.
//
// The engines are packages of their own, so that a program links only the
// drivers it uses:
//
//   - session/store/memory: [Store] in memory (nothing survives the process);
//   - session/store/sqlite: one SQLite file, shared across processes;
//   - session/store/postgres: one PostgreSQL database shared by a gateway
//     fleet, which is also the fleet's [Leases] and a [FencedStore].
//
// Package session/store/storetest is the contract every Store passes.
// Package session builds the live sessions on a Store (its History commits
// each finished turn; [BatchStore] is the group commit a store may offer);
// [ForTenant] is the view of a shared store one tenant of a gateway sees.
//
// # Errors
//
// Stores return errors wrapping [ErrNotFound] (no such session),
// [ErrBadCursor] (a List cursor the store did not issue), [ErrFenced] (a
// fenced write from a lease that has moved on), [ErrDamaged] (a
// damaged database file) and [ErrFull] (a file that cannot grow); Open of
// an engine returns a [*SchemaError] for a database a newer build wrote;
// Acquire returns a [*LeasedError] while another holder has the lease.
// Other errors are the engine's, naming its database (a [*FileError] names
// a file). The errors state the fact; ErrDamaged and ErrFull carry what
// the user can do about the file as their remedy ([gateway.Remedier]),
// which the front ends show through [gateway.ErrorText].
//
// # Concurrency
//
// Every Store and Leases method is safe for concurrent use; [LocalLeases]
// and [Lease.Release] too.
package store
