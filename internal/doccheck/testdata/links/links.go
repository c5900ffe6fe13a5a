// Package links is TestDocLinks_Fixture's package: its comments hold links
// that resolve, text in brackets that is no link, and broken links, each
// broken one on a line of its own.
//
// Links that resolve: [T], [*T], [T.Field], [T.Method], [I.Call], [links.T],
// [V], [C], [F], [errors.Is], [gateway.Registry.Set], [gateway.Tool],
// [math.Sin], [net/http.Handler], [github.com/seed02d3eb6b/acp-agent/gateway.Tool].
//
// Text in brackets: [optional], [gateway], a[i], "cgroup:[N]", "data: [DONE]".
//
// Broken:
//   - [Gone]
//   - [T.Gone]
//   - [T.Promoted]
//   - [links.Gone]
//   - [errors.Gone]
//   - [gateway.Registry.Gone]
//   - [store.Record]
//   - [example.com/nowhere.Thing]
package links

import (
	"errors"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// T is a type; [Gone2] is broken.
type T struct {
	Embedded

	// Field is a field; [T.Gone3] is broken.
	Field int // a line comment: [Gone4] is broken
}

// Embedded gives T its Promoted method.
type Embedded struct{}

// Promoted is promoted to T, which go/doc does not follow.
func (Embedded) Promoted() {}

// Method is a method.
func (T) Method() {}

// I is an interface.
type I interface {
	// Call is a method; [I.Gone5] is broken.
	Call()
}

// V is a var.
var V = errors.New("v")

// C is a const.
const C = 1

// F is a func; [gateway.Gone6] is broken.
func F() *gateway.Tool { return nil }
