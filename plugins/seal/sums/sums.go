// Package sums is warden's first seal backend: a SHA256SUMS file listing
// the digest of every file of the run directory, in the format
// `sha256sum -c` checks.
//
// Seal gets the digest ("sha256:<hex>") the core recorded for every file it
// wrote to the run directory, and run.json's final bytes. It returns one
// file, SHA256SUMS, with a line "<hex>  <path>\n" per file, sorted by path
// byte order, run.json included (its digest computed here from the bytes
// when the core did not list it). The core writes the file; this plugin
// writes nothing.
//
// The sums prove nothing about who wrote them; the signed in-toto
// statement in a DSSE envelope (DESIGN.md "Stage contracts") replaces this
// backend later.
package sums

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
	"github.com/warden-run/warden/core/sdk"
)

// Name is the plugin's name: the binary is warden-plugin-seal.
const Name = "seal"

// SumsFile is the name of the file Seal returns.
const SumsFile = "SHA256SUMS"

// RunJSON is the run record's name in the run directory.
const RunJSON = "run.json"

var withSchema = []byte(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false}`)

// Plugin is the seal plugin.
type Plugin struct{}

// New returns the seal plugin.
func New() *Plugin { return &Plugin{} }

var (
	_ sdk.Sealer     = (*Plugin)(nil)
	_ sdk.Configurer = (*Plugin)(nil)
)

// Describe names the plugin; it takes no `with:` block.
func (*Plugin) Describe() sdk.Description {
	return sdk.Description{
		Name:       Name,
		Version:    "0.1.0",
		Summary:    "seals the run directory with a SHA256SUMS file",
		WithSchema: withSchema,
	}
}

// Probe is always healthy: hashing needs nothing of the host.
func (*Plugin) Probe(context.Context, *sdk.HostInfo) *sdk.ProbeResponse {
	return sdk.Healthy("writes "+SumsFile, nil)
}

// Configure accepts only an empty `with:` block.
func (*Plugin) Configure(_ context.Context, req *sdk.ConfigureRequest) error {
	w := bytes.TrimSpace(req.GetWithJson())
	if len(w) == 0 {
		return nil
	}
	var none struct{}
	dec := json.NewDecoder(bytes.NewReader(w))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&none); err != nil {
		return fmt.Errorf("seal takes no with: block (%s): %w", w, sdk.ErrInvalidConfig)
	}
	return nil
}

type facts struct {
	Files int    `json:"files"`
	Sums  string `json:"sums"`
}

// Seal returns SHA256SUMS for req's files and run.json. A path that is not
// a clean relative path inside the run directory, or that would break the
// file's line format, is ErrInvalidConfig; a file listed twice with two
// digests, or run.json listed with a digest its bytes do not have, is
// ErrIntegrity.
func (*Plugin) Seal(_ context.Context, req *sdk.SealRequest) (*sdk.SealResponse, error) {
	sums := map[string]string{} // path → hex
	for _, f := range req.GetFiles() {
		p := f.GetPath()
		if err := checkPath(p); err != nil {
			return nil, err
		}
		hx, err := parseDigest(p, f.GetSha256())
		if err != nil {
			return nil, err
		}
		if prev, ok := sums[p]; ok && prev != hx {
			return nil, fmt.Errorf("%s is listed twice, with sha256 %s and %s: %w", p, prev, hx, sdk.ErrIntegrity)
		}
		sums[p] = hx
	}

	runJSON := req.GetRunJson()
	listed, ok := sums[RunJSON]
	switch {
	case len(runJSON) > 0:
		sum := sha256.Sum256(runJSON)
		hx := hex.EncodeToString(sum[:])
		if ok && listed != hx {
			return nil, fmt.Errorf("run.json is listed with sha256 %s but the run.json sent hashes to %s: %w", listed, hx, sdk.ErrIntegrity)
		}
		sums[RunJSON] = hx
	case !ok:
		return nil, fmt.Errorf("no run.json to seal: neither its bytes nor its digest were sent: %w", sdk.ErrInvalidConfig)
	}

	paths := make([]string, 0, len(sums))
	for p := range sums {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var b bytes.Buffer
	for _, p := range paths {
		fmt.Fprintf(&b, "%s  %s\n", sums[p], p)
	}
	fj, err := json.Marshal(facts{Files: len(paths), Sums: SumsFile})
	if err != nil {
		return nil, err
	}
	return &sdk.SealResponse{
		Files:     []*pb.SealedFile{{Path: SumsFile, Data: b.Bytes()}},
		FactsJson: fj,
	}, nil
}

// checkPath refuses a path that is absolute, climbs with "..", is not in
// clean slash form, or holds a character that would break a SHA256SUMS
// line (a newline, a carriage return, a backslash, which sha256sum reads
// as an escape, or NUL).
func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("a file with an empty path: %w", sdk.ErrInvalidConfig)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q is absolute: %w", p, sdk.ErrInvalidConfig)
	case p == ".." || strings.HasPrefix(p, "../") || strings.HasSuffix(p, "/..") || strings.Contains(p, "/../"):
		return fmt.Errorf("path %q climbs out with \"..\": %w", p, sdk.ErrInvalidConfig)
	case strings.ContainsAny(p, "\n\r\\\x00"):
		return fmt.Errorf("path %q holds a newline, carriage return, backslash or NUL: %w", p, sdk.ErrInvalidConfig)
	case path.Clean(p) != p || p == ".":
		return fmt.Errorf("path %q is not a clean relative path: %w", p, sdk.ErrInvalidConfig)
	}
	return nil
}

// parseDigest returns the lower-case hex of "sha256:<64 hex>".
func parseDigest(p, d string) (string, error) {
	hx, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hx) != sha256.Size*2 {
		return "", fmt.Errorf("%s: digest %q is not sha256:<64 hex digits>: %w", p, d, sdk.ErrInvalidConfig)
	}
	if _, err := hex.DecodeString(hx); err != nil {
		return "", fmt.Errorf("%s: digest %q is not sha256:<64 hex digits>: %w", p, d, sdk.ErrInvalidConfig)
	}
	return strings.ToLower(hx), nil
}
