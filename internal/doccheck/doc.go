// Package doccheck holds checks of the module's own source that no compiler
// makes; it has no API, only tests, run by go test like any other:
//
//   - TestDocLinks: every doc link (a bracketed Name, Name.Method,
//     Name.Field, pkg.Name, pkg.Name.Method, *Name or path/to/pkg.Name) in
//     the comments of every non-test file of the module resolves, as
//     go/doc and pkgsite resolve them, to something declared today;
//   - TestImportLayers: the module's packages import each other only in
//     the directions docs/architecture.md draws.
//
// Both read the module through go list, so they need the go command (go
// test puts its own first on PATH).
package doccheck
