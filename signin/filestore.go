package signin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// fileVersion is the version of the token file's format.
const fileVersion = 1

// fileContent is the JSON form of a token file.
type fileContent struct {
	Version int     `json:"version"`
	Records records `json:"records"`
}

// FileStore is the [Store] kept in one JSON file, shared by every agent process
// that opens the same path. The file has mode 0600; every read-modify-write
// (Save, Delete, Update) runs under flock(2) of path+".lock", so processes never
// lose each other's writes, and writes are atomic (a temporary file in the same
// directory renamed over the file), so a reader never sees a partial file.
// Within a process, Updates are serialized too: a refresh of one server's token
// makes an Update of another server wait.
//
// A FileStore is safe for concurrent use. It holds no open file between calls:
// there is nothing to close.
type FileStore struct {
	path string
	sem  chan struct{} // 1-slot: the in-process half of the write lock
	now  func() time.Time
}

var _ Store = (*FileStore)(nil)

// OpenFile returns the store kept in path, creating its parent directory (mode
// 0700) if missing. The file itself is created by the first write. An existing
// file with permissions wider than 0600 is chmod'ed to 0600. The content is
// read by each call, so a corrupt file is reported by the calls that read it
// (a [*CorruptError] naming the file), not by OpenFile.
func OpenFile(path string) (*FileStore, error) {
	if path == "" {
		return nil, errors.New("signin: empty token file path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("signin: token file directory: %w", err)
	}
	switch fi, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("signin: token file: %w", err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("signin: token file %s is not a regular file", path)
	case fi.Mode().Perm()&^0o600 != 0:
		if err := os.Chmod(path, 0o600); err != nil {
			return nil, fmt.Errorf("signin: token file %s has mode %v and cannot be made 0600: %w", path, fi.Mode().Perm(), err)
		}
	}
	return &FileStore{path: path, sem: make(chan struct{}, 1), now: time.Now}, nil
}

// Path returns the file's path.
func (s *FileStore) Path() string { return s.path }

// Latest implements [Store]. It reads the file without the lock: writes are
// atomic renames.
func (s *FileStore) Latest(_ context.Context, serverURL string) (*Record, error) {
	recs, err := s.read()
	if err != nil {
		return nil, err
	}
	return recs.latest(serverURL).clone(), nil
}

// Save implements [Store].
func (s *FileStore) Save(ctx context.Context, rec *Record) error {
	if err := rec.validate(); err != nil {
		return err
	}
	_, err := s.Update(ctx, rec.ServerURL, rec.TokenURL, func(*Record) (*Record, error) { return rec, nil })
	return err
}

// Delete implements [Store].
func (s *FileStore) Delete(ctx context.Context, serverURL string) ([]*Record, error) {
	var dropped []*Record
	err := s.locked(ctx, func() error {
		recs, err := s.read()
		if err != nil {
			return err
		}
		recs, dropped = recs.without(func(r *Record) bool { return r.ServerURL == serverURL })
		if len(dropped) == 0 {
			return nil
		}
		return s.write(recs)
	})
	if err != nil {
		return nil, err
	}
	return dropped, nil
}

// Update implements [Store]. fn runs while this process holds the file lock,
// so it should be bounded (a refresh request with a timeout).
func (s *FileStore) Update(ctx context.Context, serverURL, tokenURL string, fn func(*Record) (*Record, error)) (*Record, error) {
	var stored *Record
	err := s.locked(ctx, func() error {
		recs, err := s.read()
		if err != nil {
			return err
		}
		recs, rec, changed, err := recs.apply(key{serverURL, tokenURL}, s.now(), fn)
		if err != nil {
			return err
		}
		stored = rec
		if !changed {
			return nil
		}
		return s.write(recs)
	})
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// locked runs fn holding the in-process semaphore and then the file lock.
func (s *FileStore) locked(ctx context.Context, fn func() error) error {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("signin: waiting for the lock of %s: %w", s.path, ctx.Err())
	}
	defer func() { <-s.sem }()
	unlock, err := lockFile(ctx, s.path+".lock")
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}

// read returns the file's records; a missing or empty file has none.
func (s *FileStore) read() (records, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("signin: reading token file: %w", err)
	}
	var c fileContent
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, &CorruptError{Path: s.path, Err: err}
	}
	if c.Version != fileVersion {
		return nil, &CorruptError{Path: s.path, Err: fmt.Errorf("version %d, want %d", c.Version, fileVersion)}
	}
	for i, r := range c.Records {
		if err := r.validate(); err != nil {
			return nil, &CorruptError{Path: s.path, Err: fmt.Errorf("record %d: %w", i, err)}
		}
	}
	return c.Records, nil
}

// write replaces the file with recs atomically: a temporary file of mode 0600
// in the same directory, synced, then renamed over the file.
func (s *FileStore) write(recs records) (err error) {
	data, err := json.MarshalIndent(fileContent{Version: fileVersion, Records: recs}, "", "  ")
	if err != nil {
		return fmt.Errorf("signin: encoding token file: %w", err)
	}
	dir := filepath.Dir(s.path)
	f, err := os.CreateTemp(dir, filepath.Base(s.path)+".tmp-*") // mode 0600
	if err != nil {
		return fmt.Errorf("signin: writing token file: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("signin: writing token file: %w", err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("signin: writing token file: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("signin: writing token file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("signin: writing token file: %w", err)
	}
	if err := os.Rename(f.Name(), s.path); err != nil {
		return fmt.Errorf("signin: writing token file: %w", err)
	}
	if d, err := os.Open(dir); err == nil { // make the rename durable, best effort
		d.Sync()
		d.Close()
	}
	return nil
}
