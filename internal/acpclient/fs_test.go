package acpclient

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

func TestDirFS(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(p, []byte("disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := NewDirFS(dir)
	f.SetUnsaved(p, "one\ntwo\nthree\n")
	line, limit := 2, 1
	if res, err := f.ReadTextFile(ctx, acpsdk.ReadTextFileRequest{Path: p, Line: &line, Limit: &limit}); err != nil || res.Content != "two\n" {
		t.Fatalf("read line 2 limit 1 = %q, %v; want the unsaved text's line", res.Content, err)
	}
	if _, err := f.WriteTextFile(ctx, acpsdk.WriteTextFileRequest{Path: p, Content: "saved\n"}); err != nil {
		t.Fatal(err)
	}
	if res, err := f.ReadTextFile(ctx, acpsdk.ReadTextFileRequest{Path: p}); err != nil || res.Content != "saved\n" {
		t.Fatalf("read after write = %q, %v; want the written text", res.Content, err)
	}
	var re *acpsdk.RequestError
	if _, err := f.ReadTextFile(ctx, acpsdk.ReadTextFileRequest{Path: filepath.Join(dir, "gone")}); !errors.As(err, &re) || re.Code != codeResourceNotFound {
		t.Errorf("missing file: %v, want resource not found", err)
	}
	for _, bad := range []string{"f.txt", filepath.Join(dir, "..", "x")} {
		if _, err := f.WriteTextFile(ctx, acpsdk.WriteTextFileRequest{Path: bad, Content: "x"}); !errors.As(err, &re) || re.Code != -32602 {
			t.Errorf("write %q: %v, want invalid params", bad, err)
		}
	}
	if got := f.Calls(); len(got) != 6 || got[0].Line != 2 || got[0].Limit != 1 || got[1].Content != "saved\n" || got[1].Method != acpsdk.ClientMethodFsWriteTextFile {
		t.Errorf("calls = %+v", got)
	}
}
