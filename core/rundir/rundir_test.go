package rundir

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/core/errdefs"
)

const testID = "20261201T000000Z-00000000"

// newWriter creates a run directory in a fresh runs/ and closes it at the end
// of the test.
func newWriter(t *testing.T) (*Writer, string) {
	t.Helper()
	runs := filepath.Join(t.TempDir(), "runs")
	w, err := Create(runs, testID)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w, runs
}

// wantIntegrity fails the test unless err wraps ErrIntegrity (exit 12) and
// mentions every one of names.
func wantIntegrity(t *testing.T, err error, names ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want ErrIntegrity naming %v", names)
	}
	if !errors.Is(err, errdefs.ErrIntegrity) || errdefs.Code(err) != errdefs.ExitHost {
		t.Errorf("error %q is not ErrIntegrity (exit 12)", err)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not name %q", err, n)
		}
	}
}

func sum(data string) string {
	h := sha256.Sum256([]byte(data))
	return "sha256:" + hex.EncodeToString(h[:])
}

func TestCreate(t *testing.T) {
	base := t.TempDir()
	runs := filepath.Join(base, "deep", "runs")
	w, err := Create(runs, "inv-1")
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	defer w.Close()
	real, err := filepath.EvalSymlinks(runs)
	if err != nil {
		t.Fatal(err)
	}
	if w.Path() != filepath.Join(real, "inv-1") {
		t.Errorf("Path() = %s, want %s", w.Path(), filepath.Join(real, "inv-1"))
	}
	if fi, err := os.Lstat(w.Path()); err != nil || !fi.IsDir() {
		t.Fatalf("run directory: %v, %v", fi, err)
	}
	if data, err := os.ReadFile(filepath.Join(runs, ".gitignore")); err != nil || string(data) != "*\n" {
		t.Errorf(".gitignore = %q, %v; want %q", data, err, "*\n")
	}
	if err := w.Verify(); err != nil {
		t.Errorf("Verify of an empty run directory: %v", err)
	}

	// A second run keeps runs/ and the user's own .gitignore.
	must(t, os.WriteFile(filepath.Join(runs, ".gitignore"), []byte("mine\n"), 0o644))
	w2, err := Create(runs, "inv-2")
	if err != nil {
		t.Fatalf("second Create: %v", err)
	}
	w2.Close()
	if data, _ := os.ReadFile(filepath.Join(runs, ".gitignore")); string(data) != "mine\n" {
		t.Errorf(".gitignore rewritten to %q", data)
	}

	// Through a link in the path above runs/, the paths are the resolved ones.
	must(t, os.Symlink(filepath.Join(base, "deep"), filepath.Join(base, "alias")))
	w3, err := Create(filepath.Join(base, "alias", "runs"), "inv-3")
	if err != nil {
		t.Fatalf("Create through a linked parent: %v", err)
	}
	defer w3.Close()
	if w3.Path() != filepath.Join(real, "inv-3") {
		t.Errorf("Path() = %s, want %s", w3.Path(), filepath.Join(real, "inv-3"))
	}
	if err := w3.WriteFile("x", []byte("x")); err != nil {
		t.Errorf("WriteFile through a linked parent: %v", err)
	}
}

func TestCreateRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, runs string)
		entry string // the entry the error must name, relative to runs' parent
	}{
		{"runs is a link", func(t *testing.T, runs string) {
			must(t, os.Symlink(t.TempDir(), runs))
		}, "runs"},
		{"runs is a file", func(t *testing.T, runs string) {
			must(t, os.WriteFile(runs, nil, 0o644))
		}, "runs"},
		{".gitignore is a link", func(t *testing.T, runs string) {
			must(t, os.Mkdir(runs, 0o755))
			target := filepath.Join(t.TempDir(), "target")
			must(t, os.Symlink(target, filepath.Join(runs, ".gitignore")))
			t.Cleanup(func() {
				if _, err := os.Lstat(target); err == nil {
					t.Error("Create wrote through the .gitignore link")
				}
			})
		}, "runs/.gitignore"},
		{".gitignore is a directory", func(t *testing.T, runs string) {
			must(t, os.MkdirAll(filepath.Join(runs, ".gitignore"), 0o755))
		}, "runs/.gitignore"},
		{"run directory exists", func(t *testing.T, runs string) {
			must(t, os.MkdirAll(filepath.Join(runs, "inv"), 0o755))
		}, "runs/inv"},
		{"run directory is a link", func(t *testing.T, runs string) {
			must(t, os.Mkdir(runs, 0o755))
			must(t, os.Symlink(t.TempDir(), filepath.Join(runs, "inv")))
		}, "runs/inv"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := filepath.Join(t.TempDir(), "runs")
			tt.setup(t, runs)
			w, err := Create(runs, "inv")
			if err == nil {
				w.Close()
			}
			wantIntegrity(t, err, tt.entry)
		})
	}

	for _, id := range []string{"", ".", "..", "a/b", ".hidden", "a b", strings.Repeat("x", 129)} {
		if w, err := Create(filepath.Join(t.TempDir(), "runs"), id); !errors.Is(err, errdefs.ErrInvalid) {
			if w != nil {
				w.Close()
			}
			t.Errorf("Create with ID %q: %v, want ErrInvalid", id, err)
		}
	}
}

func TestWriteFilesAndDigests(t *testing.T) {
	w, _ := newWriter(t)
	must(t, w.Mkdir("trials/0"))
	must(t, w.Mkdir("trials/0")) // a directory the writer made is reused
	must(t, w.WriteFile("trials/0/stdout", []byte("hello\n")))
	must(t, w.WriteFile("stages/score/record", []byte("made with its directories")))
	must(t, w.WriteJSON("score.json", map[string]any{"passed": 2, "note": "<ok>"}))

	data, err := os.ReadFile(filepath.Join(w.Path(), "score.json"))
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := "{\n  \"note\": \"<ok>\",\n  \"passed\": 2\n}\n"
	if string(data) != wantJSON {
		t.Errorf("score.json = %q, want %q", data, wantJSON)
	}
	if fi, err := os.Stat(filepath.Join(w.Path(), "trials/0/stdout")); err != nil || fi.Mode().Perm()&0o600 != 0o600 {
		t.Errorf("stdout file: %v, %v", fi, err)
	}

	want := map[string]string{
		"trials/0/stdout":     sum("hello\n"),
		"stages/score/record": sum("made with its directories"),
		"score.json":          sum(wantJSON),
	}
	got := w.Files()
	if len(got) != len(want) {
		t.Errorf("Files() = %v, want %v", got, want)
	}
	for rel, d := range want {
		if got[rel] != d {
			t.Errorf("Files()[%s] = %s, want %s", rel, got[rel], d)
		}
		back, err := w.ReadBack(rel)
		if err != nil || sum(string(back)) != d {
			t.Errorf("ReadBack(%s) = %q, %v", rel, back, err)
		}
	}
	if err := w.Verify(); err != nil {
		t.Errorf("Verify: %v", err)
	}

	if err := w.WriteFile("score.json", nil); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("writing a file twice: %v, want ErrInvalid", err)
	}
	if err := w.WriteFile("trials/0", nil); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("writing over a made directory: %v, want ErrInvalid", err)
	}
	if err := w.Mkdir("score.json/x"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("Mkdir beneath a written file: %v, want ErrInvalid", err)
	}
	for _, bad := range []string{"", ".", "/abs", "../x", "a/../b", "a//b", "a/"} {
		if err := w.WriteFile(bad, nil); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("WriteFile(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := w.ReadBack("never-written"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("ReadBack of a file never written: %v, want ErrInvalid", err)
	}
}

func TestPlantedEntries(t *testing.T) {
	w, _ := newWriter(t)
	must(t, w.Mkdir("trials"))

	// An entry at the name warden writes stops the write.
	must(t, os.WriteFile(filepath.Join(w.Path(), "trials", "planted"), []byte("x"), 0o644))
	wantIntegrity(t, w.WriteFile("trials/planted", []byte("mine")), "trials/planted")
	if data, _ := os.ReadFile(filepath.Join(w.Path(), "trials", "planted")); string(data) != "x" {
		t.Errorf("planted file rewritten to %q", data)
	}

	// So does a link, and nothing is written through it.
	outside := filepath.Join(t.TempDir(), "outside")
	must(t, os.Symlink(outside, filepath.Join(w.Path(), "run.json")))
	wantIntegrity(t, w.WriteFile("run.json", []byte("{}")), "run.json")
	wantIntegrity(t, w.Replace("run.json", []byte("{}")), "run.json")
	if _, err := os.Lstat(outside); !os.IsNotExist(err) {
		t.Errorf("a file was written through the planted link: %v", err)
	}

	// And a planted directory where warden makes one.
	must(t, os.Mkdir(filepath.Join(w.Path(), "stages"), 0o755))
	wantIntegrity(t, w.Mkdir("stages"), "stages")
	wantIntegrity(t, w.WriteFile("stages/x", nil), "stages")

	// Verify names every entry warden did not write.
	wantIntegrity(t, w.Verify(), "trials/planted", "run.json", "stages")
}

func TestVerifyDetectsChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
		entry  string
	}{
		{"planted file", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "trials", "extra"), nil, 0o644))
		}, "trials/extra was not written"},
		{"planted directory", func(t *testing.T, dir string) {
			must(t, os.Mkdir(filepath.Join(dir, "extra"), 0o755))
		}, "extra was not written"},
		{"changed bytes", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "trials", "out"), []byte("other"), 0o644))
		}, "trials/out in run directory"},
		{"same size, other bytes", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "a.json"), []byte("{\"b\":2}\n"), 0o644))
		}, "a.json in run directory"},
		{"appended bytes", func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, "a.json"), os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			f.WriteString("x")
			f.Close()
		}, "a.json in run directory"},
		{"file gone", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "trials", "out")))
		}, "trials/out, which warden wrote, is gone"},
		{"file became a directory", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "a.json")))
			must(t, os.Mkdir(filepath.Join(dir, "a.json"), 0o755))
		}, "a.json in run directory"},
		{"file became a link", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, "a.json"), filepath.Join(dir, "trials", "moved")))
			must(t, os.Symlink(filepath.Join(dir, "trials", "moved"), filepath.Join(dir, "a.json")))
		}, "a.json in run directory"},
		{"directory gone", func(t *testing.T, dir string) {
			must(t, os.RemoveAll(filepath.Join(dir, "trials")))
		}, "trials that warden made is gone"},
		{"directory replaced", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, "trials"), filepath.Join(t.TempDir(), "away")))
			must(t, os.Mkdir(filepath.Join(dir, "trials"), 0o755))
		}, "trials that warden made was replaced or moved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, _ := newWriter(t)
			must(t, w.WriteFile("trials/out", []byte("output")))
			must(t, w.WriteFile("a.json", []byte("{\"a\":1}\n")))
			must(t, w.Verify())
			tt.change(t, w.Path())
			wantIntegrity(t, w.Verify(), tt.entry)
		})
	}
}

func TestReadBackRefuses(t *testing.T) {
	w, _ := newWriter(t)
	must(t, w.WriteFile("out", []byte("output")))
	must(t, w.WriteFile("fifo", []byte("output")))
	must(t, w.WriteFile("link", []byte("output")))
	dir := w.Path()

	must(t, os.WriteFile(filepath.Join(dir, "out"), []byte("OUTPUT"), 0o644))
	_, err := w.ReadBack("out")
	wantIntegrity(t, err, "out", "bytes")

	// A FIFO swapped in is refused at once, not waited on.
	must(t, os.Remove(filepath.Join(dir, "fifo")))
	must(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	done := make(chan error, 1)
	go func() {
		_, err := w.ReadBack("fifo")
		done <- err
	}()
	select {
	case err := <-done:
		wantIntegrity(t, err, "fifo", "FIFO")
	case <-time.After(5 * time.Second):
		// Unblock the reader so the test can end.
		if f, err := os.OpenFile(filepath.Join(dir, "fifo"), os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("ReadBack blocked on a FIFO")
	}

	must(t, os.Remove(filepath.Join(dir, "link")))
	must(t, os.WriteFile(filepath.Join(t.TempDir(), "same"), []byte("output"), 0o644))
	must(t, os.Symlink(filepath.Join(t.TempDir(), "same"), filepath.Join(dir, "link")))
	_, err = w.ReadBack("link")
	wantIntegrity(t, err, "link")
}

func TestReplacedDirectoryStopsWrite(t *testing.T) {
	tests := []struct {
		name string
		// move moves the directory at dir away to elsewhere and leaves a
		// link (or another directory) in its place.
		move  func(t *testing.T, dir, elsewhere string)
		write string
		entry string
	}{
		{"subdirectory moved, link left", func(t *testing.T, dir, elsewhere string) {
			must(t, os.Rename(filepath.Join(dir, "trials"), elsewhere))
			must(t, os.Symlink(elsewhere, filepath.Join(dir, "trials")))
		}, "trials/out", "trials"},
		{"run directory moved, link left", func(t *testing.T, dir, elsewhere string) {
			must(t, os.Rename(dir, elsewhere))
			must(t, os.Symlink(elsewhere, dir))
		}, "trials/out", testID},
		{"runs moved, link left", func(t *testing.T, dir, elsewhere string) {
			runs := filepath.Dir(dir)
			must(t, os.Rename(runs, elsewhere))
			must(t, os.Symlink(elsewhere, runs))
		}, "trials/out", "runs"},
		{"subdirectory swapped for a new one", func(t *testing.T, dir, elsewhere string) {
			must(t, os.Rename(filepath.Join(dir, "trials"), elsewhere))
			must(t, os.Mkdir(filepath.Join(dir, "trials"), 0o755))
		}, "trials/out", "trials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, _ := newWriter(t)
			must(t, w.Mkdir("trials"))
			elsewhere := filepath.Join(t.TempDir(), "project")
			tt.move(t, w.Path(), elsewhere)
			wantIntegrity(t, w.WriteFile(tt.write, []byte("x")), tt.entry)
			wantIntegrity(t, w.Replace("trials/run.json", []byte("{}")))
			_, err := w.CopyFrom("trials/copied", strings.NewReader("x"), 10)
			wantIntegrity(t, err)
			// Nothing reached the place the directory was moved to.
			var found []string
			filepath.Walk(elsewhere, func(p string, fi os.FileInfo, err error) error {
				if err == nil && !fi.IsDir() {
					found = append(found, p)
				}
				return nil
			})
			sort.Strings(found)
			for _, f := range found {
				if strings.HasSuffix(f, "/out") || strings.HasSuffix(f, "/copied") || strings.HasSuffix(f, "run.json") {
					t.Errorf("a write went through the moved directory: %s", f)
				}
			}
			if len(w.Files()) != 0 {
				t.Errorf("Files() = %v after refused writes", w.Files())
			}
		})
	}
}

func TestFileWrittenIntoMovingDirectoryIsRemoved(t *testing.T) {
	w, _ := newWriter(t)
	must(t, w.Mkdir("trials"))
	elsewhere := filepath.Join(t.TempDir(), "project")
	// The directory moves between the write and the check after it.
	w.afterWrite = func(rel string) {
		must(t, os.Rename(filepath.Join(w.Path(), "trials"), elsewhere))
		must(t, os.Symlink(elsewhere, filepath.Join(w.Path(), "trials")))
	}
	err := w.WriteFile("trials/out", []byte("x"))
	wantIntegrity(t, err, "trials", "removed again")
	if _, err := os.Lstat(filepath.Join(elsewhere, "out")); !os.IsNotExist(err) {
		t.Errorf("the file written into the moved directory is still there: %v", err)
	}
	if _, ok := w.Files()["trials/out"]; ok {
		t.Error("the removed file is still recorded")
	}
}

func TestReplace(t *testing.T) {
	w, _ := newWriter(t)
	must(t, w.Replace("run.json", []byte(`{"status":"running"}`)))
	must(t, w.ReplaceJSON("run.json", map[string]string{"status": "completed"}))
	final := "{\n  \"status\": \"completed\"\n}\n"
	if data, err := os.ReadFile(filepath.Join(w.Path(), "run.json")); err != nil || string(data) != final {
		t.Errorf("run.json = %q, %v; want %q", data, err, final)
	}
	if got := w.Files()["run.json"]; got != sum(final) {
		t.Errorf("Files()[run.json] = %s, want the latest bytes' %s", got, sum(final))
	}
	if back, err := w.ReadBack("run.json"); err != nil || string(back) != final {
		t.Errorf("ReadBack(run.json) = %q, %v", back, err)
	}
	must(t, w.Verify()) // no temp file left behind

	// A run.json changed since warden wrote it is reported, not replaced.
	tampered := []byte(`{"status":"completed","score":100}`)
	must(t, os.WriteFile(filepath.Join(w.Path(), "run.json"), tampered, 0o644))
	wantIntegrity(t, w.Replace("run.json", []byte("{}")), "run.json")
	if data, _ := os.ReadFile(filepath.Join(w.Path(), "run.json")); !bytes.Equal(data, tampered) {
		t.Errorf("the tampered run.json was replaced: %q", data)
	}
}

func TestCopyFrom(t *testing.T) {
	w, _ := newWriter(t)
	c, err := w.CopyFrom("trials/0/stdout", strings.NewReader("0123456789"), 4)
	if err != nil {
		t.Fatalf("CopyFrom: %v", err)
	}
	want := Copied{Written: 4, Total: 10, Truncated: true, Digest: sum("0123")}
	if c != want {
		t.Errorf("CopyFrom = %+v, want %+v", c, want)
	}
	c, err = w.CopyFrom("trials/0/stderr", strings.NewReader("err"), 16<<20)
	if err != nil || c.Truncated || c.Written != 3 || c.Digest != sum("err") {
		t.Errorf("CopyFrom under the limit = %+v, %v", c, err)
	}
	if back, err := w.ReadBack("trials/0/stdout"); err != nil || string(back) != "0123" {
		t.Errorf("ReadBack(stdout) = %q, %v", back, err)
	}
	if w.Files()["trials/0/stdout"] != sum("0123") {
		t.Errorf("Files() digest of stdout = %s", w.Files()["trials/0/stdout"])
	}

	// A read error keeps what was copied and reports the error.
	c, err = w.CopyFrom("trials/0/broken", io.MultiReader(strings.NewReader("part"), errReader{}), 100)
	if err == nil || c.Written != 4 || w.Files()["trials/0/broken"] != sum("part") {
		t.Errorf("CopyFrom with a failing reader = %+v, %v", c, err)
	}
	must(t, w.Verify())
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("pipe broke") }

// TestCopyFromConcurrently copies two pipes at once, as the target's stdout
// and stderr are: one copy must not hold up the other, or a target that fills
// one pipe while warden waits on the other would hang.
func TestCopyFromConcurrently(t *testing.T) {
	w, _ := newWriter(t)
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	var wg sync.WaitGroup
	results := make([]Copied, 2)
	errs := make([]error, 2)
	for i, r := range []io.Reader{outR, errR} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = w.CopyFrom([]string{"stdout", "stderr"}[i], r, 1<<20)
		}()
	}
	done := make(chan struct{})
	go func() {
		// Write stderr fully before stdout ends: with one copy holding
		// the writer, this would block forever.
		errW.Write(bytes.Repeat([]byte("e"), 100000))
		errW.Close()
		outW.Write([]byte("out"))
		outW.Close()
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("concurrent CopyFrom calls blocked each other")
	}
	if errs[0] != nil || errs[1] != nil || results[0].Written != 3 || results[1].Written != 100000 {
		t.Errorf("results %+v, errors %v", results, errs)
	}
	must(t, w.Verify())
}

func TestClose(t *testing.T) {
	w, _ := newWriter(t)
	must(t, w.WriteFile("a", []byte("a")))
	must(t, w.Close())
	must(t, w.Close())
	if err := w.WriteFile("b", nil); err == nil {
		t.Error("WriteFile after Close succeeded")
	}
	if err := w.Verify(); err == nil {
		t.Error("Verify after Close succeeded")
	}
	if _, err := os.Stat(filepath.Join(w.Path(), "a")); err != nil {
		t.Errorf("Close removed the run directory's files: %v", err)
	}
}

func TestNewInvocationID(t *testing.T) {
	pattern := regexp.MustCompile(`^\d{8}T\d{6}Z-[0-9a-f]{8}$`)
	seen := map[string]bool{}
	prev := ""
	for range 100 {
		id := NewInvocationID()
		if !pattern.MatchString(id) || !idPattern.MatchString(id) {
			t.Fatalf("NewInvocationID() = %q, not YYYYMMDDTHHMMSSZ-<8 hex>", id)
		}
		if seen[id] {
			t.Fatalf("NewInvocationID() repeated %q", id)
		}
		seen[id] = true
		if id[:16] < prev {
			t.Errorf("IDs do not sort by time: %q after %q", id, prev)
		}
		prev = id[:16]
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
