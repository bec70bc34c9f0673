package grant

// This file holds the grants as the author wrote them, before any decoding:
// the pipeline loader (core/pipeline) fills these from `grants:` with the
// position of every key, and Decode turns them into keys and tables. Nothing
// here is interpreted; it only carries text and where it came from, so that
// every decode error and every audit finding can name the pipeline line.

// Pos is a place in a pipeline or policy file. The zero Pos means "not from a
// file" (a default, or a key made in code).
type Pos struct {
	File string
	Line int // 1-based; 0 when unknown
	Col  int // 1-based; 0 when unknown
}

// Spec is one authored key with its position.
type Spec struct {
	Text string
	Pos  Pos
}

// OnlySpec is an `only:` entry: the key, and the first arguments it is
// allowed with.
type OnlySpec struct {
	Key  Spec
	Args []string
}

// ExecSpec is `grants.exec` as written.
type ExecSpec struct {
	Allow []Spec
	Deny  []Spec
	Only  []OnlySpec
}

// FileSpec is the file part of `grants` as written.
type FileSpec struct {
	Read        []Spec
	Write       []Spec
	SystemPaths []Spec
}

// Layer is one layer of grants (the pipeline's, or a host policy file's)
// as written. Name says which ("pipeline", "policy") in verdict reasons;
// Pos is where its `grants:` block starts.
type Layer struct {
	Name string
	Pos  Pos
	Exec ExecSpec
	File FileSpec
}
