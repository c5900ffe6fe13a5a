package doccheck

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocLinks checks every doc link in the comments of the module's
// non-test files: the doc comments of the package, of every declaration and
// of every struct field and interface method, and the line comments beside
// them. A link is found as gofmt, go doc and pkgsite find it (go/doc/comment's
// parser, with go/doc's lookups: a capitalized name in brackets, qualified by
// an imported package's name, the package's own, a standard library package
// with a one-element path such as [errors.Is], or a full import path) and
// must name something declared today:
//
//   - [Name] and [pkg.Name]: a type, func, var or const of the package;
//   - [Name.Method], [Name.Field]: a method of the type, a field of the
//     struct or a method of the interface, declared on it (go/doc does not
//     follow embedding, so a promoted member is no link);
//   - [pkg.Name] whose pkg the package does not import: broken, since godoc
//     then shows the brackets and not a link.
//
// A bracketed lower-case word ([optional]) is text, never a link, and so is
// a bracketed package name the package does not import ([foo]). So is a
// bracketed upper-case word the package does not declare ("cgroup:[N]",
// "data: [DONE]"): go/doc would link it if it were declared, and it is
// taken for a placeholder or a literal when it is not.
func TestDocLinks(t *testing.T) {
	r := newResolver(t, "./...")
	var broken int
	stillBroken := make(map[string]bool)
	for _, p := range r.own {
		for _, b := range r.checkPackage(t, p) {
			if at, _, _ := strings.Cut(b, ": "); brokenElsewhere[at+": "+linkText(b)] {
				stillBroken[at+": "+linkText(b)] = true
				continue
			}
			t.Error(b)
			broken++
		}
	}
	for k := range brokenElsewhere {
		if !stillBroken[k] {
			t.Errorf("%s is no longer a broken link: delete it from brokenElsewhere", k)
		}
	}
	if broken > 0 {
		t.Logf("%d broken doc links: rename the link to what is declared today, qualify it with a package the file's package imports, or drop the brackets", broken)
	}
}

// brokenElsewhere are the broken links ("file:line: [text]") that another
// branch under way fixes (none today). Each entry fails the test once its
// link is gone, so that the list is emptied as the fixes land.
var brokenElsewhere = map[string]bool{}

// linkText returns the link text of one line of checkPackage's report.
func linkText(b string) string {
	_, rest, _ := strings.Cut(b, ": ")
	text, _, _ := strings.Cut(rest, ": ")
	return text
}

// unimported marks, in a DocLink's ImportPath, a package name that neither
// the package's imports nor the standard library resolve.
const unimported = "\x00unimported:"

// resolver finds the packages doc links name and what they declare.
type resolver struct {
	root   string
	own    []*listed          // the module's packages
	byPath map[string]*listed // every package in their build graph
	docs   map[string]*loaded // loaded packages by import path
	fset   *token.FileSet     // positions of the module's files
	cache  map[string]*listed // packages go list was asked about one by one
	t      *testing.T         // for lazy go list calls
}

// loaded is the go/doc view of a package a link names, or why there is none.
type loaded struct {
	pkg *doc.Package
	err error
}

func newResolver(t *testing.T, patterns ...string) *resolver {
	r := &resolver{
		root:   moduleRoot(t),
		byPath: make(map[string]*listed),
		docs:   make(map[string]*loaded),
		fset:   token.NewFileSet(),
		cache:  make(map[string]*listed),
		t:      t,
	}
	for _, p := range goList(t, append([]string{"-deps"}, patterns...)...) {
		r.byPath[p.ImportPath] = p
		if p.DepOnly || strings.Contains(p.ImportPath, "/vendor/") || strings.Contains(p.ImportPath, "/node_modules/") {
			continue
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		r.own = append(r.own, p)
	}
	if len(r.own) == 0 {
		t.Fatalf("go list %s listed no package", strings.Join(patterns, " "))
	}
	return r
}

// lookup returns go list's record of the package at path, asking go list
// for a package outside the module's build graph (a link to [math.Sin] in a
// package that does not import math).
func (r *resolver) lookup(path string) *listed {
	if p, ok := r.byPath[path]; ok {
		return p
	}
	if p, ok := r.cache[path]; ok {
		return p
	}
	var p *listed
	if ps := goList(r.t, path); len(ps) == 1 && ps[0].Error == nil {
		p = ps[0]
	}
	r.cache[path] = p
	return p
}

// load returns the go/doc view of the package at path: its declarations,
// fields and methods, from the files that build on this platform.
func (r *resolver) load(path string) (*doc.Package, error) {
	if l, ok := r.docs[path]; ok {
		return l.pkg, l.err
	}
	l := new(loaded)
	r.docs[path] = l
	p := r.lookup(path)
	if p == nil {
		l.err = fmt.Errorf("no package %s", path)
		return nil, l.err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range append(append([]string(nil), p.GoFiles...), p.CgoFiles...) {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			l.err = err
			return nil, err
		}
		files = append(files, f)
	}
	l.pkg, l.err = doc.NewFromFiles(fset, files, path, doc.AllDecls|doc.PreserveAST)
	return l.pkg, l.err
}

// checkPackage returns one line per broken doc link in p's non-test files,
// those of other platforms included.
func (r *resolver) checkPackage(t *testing.T, p *listed) []string {
	var files []*ast.File
	names := append(append([]string(nil), p.GoFiles...), p.CgoFiles...)
	names = append(names, p.IgnoredGoFiles...)
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(r.fset, filepath.Join(p.Dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("%s: %v", p.ImportPath, err)
		}
		if f.Name.Name != p.Name { // a //go:build ignore program
			continue
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil
	}
	self, err := doc.NewFromFiles(r.fset, files, p.ImportPath, doc.AllDecls|doc.PreserveAST)
	if err != nil {
		t.Fatalf("%s: go/doc: %v", p.ImportPath, err)
	}
	godoc := self.Parser()
	// Every capitalized bracketed name becomes a link, so that a name go/doc
	// would leave as text (an undeclared symbol, an unimported package) is
	// seen and reported.
	all := &comment.Parser{
		LookupSym: func(recv, name string) bool { return true },
		LookupPackage: func(name string) (string, bool) {
			if path, ok := godoc.LookupPackage(name); ok {
				return path, true // "" for the package itself
			}
			if path, ok := comment.DefaultLookupPackage(name); ok {
				return path, true
			}
			return unimported + name, true
		},
	}
	var broken []string
	for _, f := range files {
		for _, cg := range commentsOf(f) {
			used := make(map[token.Pos]bool)
			for _, l := range docLinks(all.Parse(cg.Text())) {
				why := r.why(l, p, godoc)
				if why == "" {
					continue
				}
				pos, text := r.locate(cg, l, p.Name, used)
				where := r.fset.Position(pos)
				file, err := filepath.Rel(r.root, where.Filename)
				if err != nil {
					file = where.Filename
				}
				broken = append(broken, fmt.Sprintf("%s:%d: %s: %s", file, where.Line, text, why))
			}
		}
	}
	return broken
}

// why says why l does not resolve, or returns "" when it does.
func (r *resolver) why(l *comment.DocLink, p *listed, godoc *comment.Parser) string {
	target := l.Name
	if l.Recv != "" {
		target = l.Recv + "." + l.Name
	}
	switch {
	case strings.HasPrefix(l.ImportPath, unimported):
		name := strings.TrimPrefix(l.ImportPath, unimported)
		if l.Name == "" {
			return "" // [word]: text, not a link
		}
		return fmt.Sprintf("package %s declares no %s and imports no package %s (godoc shows this as text)", p.Name, name, name)
	case l.ImportPath == "":
		if l.Name == "" || godoc.LookupSym(l.Recv, l.Name) {
			return ""
		}
		if l.Recv == "" && strings.ToUpper(l.Name) == l.Name {
			return "" // "cgroup:[N]", "data: [DONE]": a placeholder or a literal
		}
		return fmt.Sprintf("package %s declares no %s", p.Name, target)
	}
	pkg, err := r.load(l.ImportPath)
	if err != nil {
		return err.Error()
	}
	if l.Name == "" || pkg.Parser().LookupSym(l.Recv, l.Name) {
		return ""
	}
	return fmt.Sprintf("package %s (%s) declares no %s", pkg.Name, l.ImportPath, target)
}

// locate finds l's text in cg, the first occurrence not yet reported.
func (r *resolver) locate(cg *ast.CommentGroup, l *comment.DocLink, self string, used map[token.Pos]bool) (token.Pos, string) {
	tail := l.Name
	if l.Recv != "" {
		tail = l.Recv + "." + tail
	}
	var prefix string
	switch {
	case strings.HasPrefix(l.ImportPath, unimported):
		prefix = regexp.QuoteMeta(strings.TrimPrefix(l.ImportPath, unimported)) + `\.`
	case l.ImportPath == "":
		prefix = `(?:` + regexp.QuoteMeta(self) + `\.)?`
	default:
		prefix = `(?:` + regexp.QuoteMeta(l.ImportPath) + `|[\w-]+)\.`
	}
	re := regexp.MustCompile(`\[\*?` + prefix + regexp.QuoteMeta(tail) + `\]`)
	for _, c := range cg.List {
		for _, m := range re.FindAllStringIndex(c.Text, -1) {
			pos := c.Slash + token.Pos(m[0])
			if !used[pos] {
				used[pos] = true
				return pos, c.Text[m[0]:m[1]]
			}
		}
	}
	return cg.Pos(), "[" + tail + "]"
}

// commentsOf returns f's doc comments (the package's, each declaration's,
// each spec's, each field's and interface method's) and the line comments
// of specs and fields.
func commentsOf(f *ast.File) []*ast.CommentGroup {
	var out []*ast.CommentGroup
	add := func(cgs ...*ast.CommentGroup) {
		for _, cg := range cgs {
			if cg != nil {
				out = append(out, cg)
			}
		}
	}
	fields := func(n ast.Node) {
		if n == nil {
			return
		}
		ast.Inspect(n, func(n ast.Node) bool {
			if fd, ok := n.(*ast.Field); ok {
				add(fd.Doc, fd.Comment)
			}
			return true
		})
	}
	add(f.Doc)
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			add(d.Doc)
		case *ast.GenDecl:
			add(d.Doc)
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					add(s.Doc, s.Comment)
					fields(s.Type)
				case *ast.ValueSpec:
					add(s.Doc, s.Comment)
					fields(s.Type)
				}
			}
		}
	}
	return out
}

// docLinks returns the doc links of d in order.
func docLinks(d *comment.Doc) []*comment.DocLink {
	var out []*comment.DocLink
	var text func([]comment.Text)
	text = func(ts []comment.Text) {
		for _, t := range ts {
			switch t := t.(type) {
			case *comment.DocLink:
				out = append(out, t)
			case *comment.Link:
				text(t.Text)
			}
		}
	}
	var blocks func([]comment.Block)
	blocks = func(bs []comment.Block) {
		for _, b := range bs {
			switch b := b.(type) {
			case *comment.Paragraph:
				text(b.Text)
			case *comment.Heading:
				text(b.Text)
			case *comment.List:
				for _, item := range b.Items {
					blocks(item.Content)
				}
			}
		}
	}
	blocks(d.Content)
	return out
}
