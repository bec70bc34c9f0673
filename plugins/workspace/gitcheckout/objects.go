package gitcheckout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"

	"github.com/warden-run/warden/core/sdk"
)

// objects reads the user's object store through one `git cat-file --batch`
// process: the commit, every tree beneath it and every blob. cat-file only
// reads objects; it takes no lock and writes nothing, and one process for
// the whole walk keeps a Build to a few process starts.
//
// Requests are answered in order, and git flushes after every answer, so a
// caller may ask one object at a time (ask, then read) or stream many.
type objects struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
	done   bool
}

// errMissing is cat-file's answer for a name that names no object.
var errMissing = errors.New("no such object")

func openObjects(ctx context.Context, env []string, repo string) (*objects, error) {
	ctx, cancel := context.WithCancel(ctx)
	o := &objects{cancel: cancel}
	o.cmd = sdk.Command(ctx, "git", "-C", repo, "cat-file", "--batch")
	o.cmd.Env = env
	o.cmd.Stderr = &o.stderr
	var err error
	if o.in, err = o.cmd.StdinPipe(); err != nil {
		cancel()
		return nil, err
	}
	out, err := o.cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	o.out = bufio.NewReaderSize(out, 64<<10)
	if err := o.cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("unable to start git cat-file in %s: %w", repo, err)
	}
	return o, nil
}

// close ends the process after the last answer and reports its failure.
func (o *objects) close() error {
	if o.done {
		return nil
	}
	o.done = true
	o.in.Close()
	err := o.cmd.Wait()
	o.cancel()
	if err != nil {
		return gitError([]string{"cat-file", "--batch"}, &o.stderr, err)
	}
	return nil
}

// abort kills the process; it is a no-op after close.
func (o *objects) abort() {
	if o.done {
		return
	}
	o.done = true
	o.cancel()
	o.in.Close()
	_ = o.cmd.Wait()
}

// header reads the answer line for name: the object's id, type and size.
func (o *objects) header(name string) (oid, typ string, size int64, err error) {
	line, err := o.out.ReadString('\n')
	if err != nil {
		return "", "", 0, fmt.Errorf("git cat-file ended before answering %s: %w (%s)", name, err, strings.TrimSpace(o.stderr.String()))
	}
	f := strings.Fields(line)
	if len(f) == 2 && (f[1] == "missing" || f[1] == "ambiguous") {
		return "", "", 0, fmt.Errorf("%s: %s: %w", name, f[1], errMissing)
	}
	if len(f) != 3 {
		return "", "", 0, fmt.Errorf("git cat-file: unexpected answer %q for %s", strings.TrimSpace(line), name)
	}
	size, err = strconv.ParseInt(f[2], 10, 64)
	if err != nil || size < 0 {
		return "", "", 0, fmt.Errorf("git cat-file: bad size in %q", strings.TrimSpace(line))
	}
	return f[0], f[1], size, nil
}

// trailer reads the newline that ends every object's contents.
func (o *objects) trailer(name string) error {
	if nl, err := o.out.ReadByte(); err != nil || nl != '\n' {
		return fmt.Errorf("git cat-file: the contents of %s are not followed by a newline", name)
	}
	return nil
}

// read asks for one object by name (any revision: an id, "HEAD^{commit}")
// and returns its id and contents; its type must be typ.
func (o *objects) read(name, typ string) (string, []byte, error) {
	if _, err := io.WriteString(o.in, name+"\n"); err != nil {
		return "", nil, fmt.Errorf("unable to ask git cat-file for %s: %w", name, err)
	}
	oid, got, size, err := o.header(name)
	if err != nil {
		return "", nil, err
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(o.out, body); err != nil {
		return "", nil, fmt.Errorf("git cat-file: short contents for %s: %w", name, err)
	}
	if err := o.trailer(name); err != nil {
		return "", nil, err
	}
	if got != typ {
		return "", nil, fmt.Errorf("%s is a %s, not a %s", name, got, typ)
	}
	return oid, body, nil
}

// stream asks for every blob in names at once (a goroutine writes the
// requests while the answers are read) and hands each to fn in order with
// a reader over exactly its size bytes.
func (o *objects) stream(names []string, fn func(i int, r io.Reader, size int64) error) error {
	if len(names) == 0 {
		return nil
	}
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		bw := bufio.NewWriter(o.in)
		for _, n := range names {
			if _, err := bw.WriteString(n + "\n"); err != nil {
				return
			}
		}
		bw.Flush()
	}()
	err := o.answers(names, fn)
	if err != nil {
		o.abort() // unblocks the feeder if cat-file stopped reading
	}
	<-fed
	return err
}

func (o *objects) answers(names []string, fn func(i int, r io.Reader, size int64) error) error {
	for i, n := range names {
		oid, typ, size, err := o.header(n)
		if err != nil {
			return err
		}
		if oid != n || typ != "blob" {
			return fmt.Errorf("git cat-file answered %s %s for blob %s", typ, oid, n)
		}
		lr := &io.LimitedReader{R: o.out, N: size}
		if err := fn(i, lr, size); err != nil {
			return err
		}
		if lr.N != 0 {
			return fmt.Errorf("blob %s: %d bytes left unread", n, lr.N)
		}
		if err := o.trailer(n); err != nil {
			return err
		}
	}
	return nil
}

// commit is the source commit: its id, tree and the raw dates
// ("<unix> <zone>") of its author and committer lines.
type commit struct {
	id, tree, authorDate, committerDate string
}

// resolve returns the commit rev names; errMissing when it names none.
func (o *objects) resolve(rev string) (commit, error) {
	var c commit
	id, raw, err := o.read(rev+"^{commit}", "commit")
	if err != nil {
		return c, err
	}
	c.id = id
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" {
			break // end of the header
		}
		key, val, _ := strings.Cut(line, " ")
		switch key {
		case "tree":
			c.tree = val
		case "author":
			c.authorDate = identDate(val)
		case "committer":
			c.committerDate = identDate(val)
		}
	}
	if c.tree == "" || c.authorDate == "" || c.committerDate == "" {
		return c, fmt.Errorf("commit %s has no tree, author or committer line", id)
	}
	return c, nil
}

// identDate returns "<unix> <zone>" from "Name <email> <unix> <zone>".
func identDate(ident string) string {
	i := strings.LastIndexByte(ident, '>')
	if i < 0 {
		return ""
	}
	f := strings.Fields(ident[i+1:])
	if len(f) != 2 {
		return ""
	}
	return f[0] + " " + f[1]
}

// walk returns every blob and gitlink beneath the tree oid, with paths
// under prefix. A tree entry is "<octal mode> <name>\0<raw id>"; the id's
// length follows the repository's hash (20 bytes for SHA-1, 32 for SHA-256).
func (o *objects) walk(oid, prefix string) ([]entry, error) {
	_, body, err := o.read(oid, "tree")
	if err != nil {
		return nil, err
	}
	idLen := len(oid) / 2
	var out []entry
	for len(body) > 0 {
		sp := bytes.IndexByte(body, ' ')
		nul := bytes.IndexByte(body, 0)
		if sp < 0 || nul < sp || len(body) < nul+1+idLen {
			return nil, fmt.Errorf("tree %s is malformed", oid)
		}
		mode, err := strconv.ParseUint(string(body[:sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("tree %s: bad mode %q", oid, body[:sp])
		}
		name := string(body[sp+1 : nul])
		id := hex.EncodeToString(body[nul+1 : nul+1+idLen])
		body = body[nul+1+idLen:]
		p := name
		if prefix != "" {
			p = prefix + "/" + name
		}
		switch uint32(mode) {
		case modeTree:
			sub, err := o.walk(id, p)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		case modeGitlink:
			out = append(out, entry{mode: modeGitlink, typ: "commit", oid: id, path: p})
		default:
			out = append(out, entry{mode: uint32(mode), typ: "blob", oid: id, path: p})
		}
	}
	return out, nil
}
