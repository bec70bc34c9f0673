package privroot

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestReclaimRemovesOwnedDirectories(t *testing.T) {
	r := openTestRoot(t)
	dead := deadPid(t)
	outside := t.TempDir()
	ws := filepath.Join(outside, OwnedPrefix+"abc")
	must(t, os.MkdirAll(filepath.Join(ws, "ro", "deep"), 0o755))
	must(t, os.Chmod(filepath.Join(ws, "ro"), 0o500))
	notOurs := filepath.Join(outside, "precious")
	must(t, os.Mkdir(notOurs, 0o755))
	linkWS := filepath.Join(outside, OwnedPrefix+"link")
	must(t, os.Symlink(notOurs, linkWS))

	deadRun := owned(t, r, "run-deadowner", dead, "12345")
	list := ws + "\n" + notOurs + "\n" + linkWS + "\nrelative/" + OwnedPrefix + "x\n"
	must(t, os.WriteFile(filepath.Join(deadRun, ownedName), []byte(list), 0o600))

	live, err := r.NewParent()
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	liveWS := filepath.Join(outside, OwnedPrefix+"live")
	must(t, os.Mkdir(liveWS, 0o755))
	must(t, live.Own(liveWS))
	if err := live.Own(notOurs); err == nil {
		t.Fatal("Own accepted a directory not named " + OwnedPrefix + "…")
	}

	removed, err := r.Reclaim()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(removed, ws) || !slices.Contains(removed, deadRun) {
		t.Fatalf("Reclaim removed %v; want the dead run's parent and its workspace", removed)
	}
	for _, p := range []string{ws, deadRun} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s survived Reclaim", p)
		}
	}
	for _, p := range []string{notOurs, linkWS, liveWS} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s should have been left alone: %v", p, err)
		}
	}
}
