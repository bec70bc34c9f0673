// Package grant decides every exec and file verdict in warden (spec 000,
// "Exec rules: one table, one function"). The guard asks it before a launch,
// the confine plugins render its kernel projection, and the audit plugins
// judge every traced access with it. No other code makes a verdict.
//
// # From keys to a table
//
// An author writes grants in a pipeline (and a host may add a policy file
// in the same format). The loader hands each as a Layer of Specs: text with
// a file:line:col. Decode turns a layer's `grants.exec` into an ExecGrant,
// the keys as the author meant them:
//
//	allow: ["@system", git, /usr/local/go/bin/, ~/bin/fmt]
//	deny:  [curl]
//	only:  {npm: [test, ci]}
//
// gives the dir keys of SystemRoots (plus the layer's systemPaths), the bare
// name git, the dir key /usr/local/go/bin, the path key $HOME/bin/fmt, the
// bare name curl with verdict Deny, and npm with Only(ci, test). @path is
// every directory of the process's own PATH. A malformed key (empty,
// relative, an unknown @expansion, only without arguments) is an error
// wrapping errdefs.ErrInvalid that starts with the key's file:line:col;
// every one is reported.
//
// CompileExec turns an ExecGrant into an ExecTable over this host. A path
// or dir key becomes its real path, read from disk once and frozen. A bare
// key becomes at most three rules: the file the host PATH finds, the
// bundled tool of that name (Tools; warden bundles none yet), and, for a
// deny, a veto on the name everywhere. Every rule enters through one insert
// that meets two rules for the same key, so `allow git` and
// `deny /usr/bin/git` cannot disagree: the file is denied. A table is
// compiled afresh for every launch, since a bare key follows the host PATH.
//
// # One verdict function
//
// ExecTable.Decide judges a Program (a bundled tool, or a file with the
// spelling it was run by and its real path). Verdicts form a lattice,
//
//	Deny < Only(args) < Allow
//
// and every rule has a rank,
//
//	Dir(depth) < Carrier < Exact < Veto
//
// where a deeper directory outranks a shallower one, an exact file key any
// directory, and a veto everything. Among the rules that speak to the
// program the highest rank decides and equal ranks meet; if none speaks,
// the program is denied.
//
// Which rules speak depends on polarity. An allow speaks by the stored
// name: an allow dir to the files beneath it, an allow file to itself. A
// deny speaks under every spelling: its name is folded (ASCII and Unicode
// case, NFC/NFD normalisation), so `deny /x/tools/evil/` holds
// /x/Tools/evil/t on a case-sensitive disk, because a copy of the tree onto
// a case-insensitive one, or a respelling, would run the same thing. A veto
// holds any program whose name (as run, or real) folds to the vetoed one. A
// denial that holds the program only under another spelling is reported as
// respelled, naming the denied spelling:
//
//	deny: /x/Tools/evil/t — rule "deny dir /x/tools/evil" (pipeline grants.exec.deny "/x/tools/evil/", pipeline.yaml:12:9, rank dir(3)); matched as respelled "/x/tools/evil"
//
// # Launching
//
// ResolveHead turns argv[0] into a Head the way the kernel would: a bare
// name walks PATH, a path is anchored at the launch directory and walked as
// written (a ".." after a symlink leaves the link's target; a trailing '/'
// never runs). A head that names nothing is NotFound (exit 127); one that is
// not an executable file is NotExecutable (126); neither reaches a grant.
// ExecTable.CheckExec judges a head with its argv and returns an Admitted:
// the only value a launcher accepts, holding the real path that was judged,
// the argv with the head as written as argv[0], and the table.
//
// # Stacking
//
// Layers stack by Meet (Stack for many): allows meet, denies join, vetoes
// union. Every key of either table is met at the verdict each side gives
// it, and kept unless it met to Deny without a layer having written that
// deny; a deny nobody wrote would hold every other spelling of the name and
// deny what both layers allow (spec 000's counterexample; see law_test.go).
// So for every program p
//
//	Meet(a, b).Verdict(p) == a.Verdict(p).Meet(b.Verdict(p))
//
// and a host policy can only restrict a pipeline. The property tests check
// this law, the lattice laws and the kernel projection over a universe of
// case and normalisation variants.
//
// # The kernel projection
//
// ExecTable.Kernel renders the same rules as an ordered list for a
// last-match-wins kernel: each file once at its final verdict, sorted by
// rank with denies after allows within a rank, so the last rule that
// matches gives Decide's answer. The kernel cannot see argv (an Only is an
// allow there) or which bundled tool runs (it sees their carrier).
//
// # File access
//
// Compile builds both tables for one launch from the layers and the runtime
// Places (workspace, call directories, private home, hidden places).
// Table.Access(path, op) is the one function an audit plugin calls for every
// traced access: reads are allowed within the read places (the system roots,
// the layers' met grants.read, grants.write and systemPaths, the runtime
// places), writes and socket connects within the write places, exec by the
// exec table, mount never; a hidden place denies at any depth under every
// spelling; /proc is readable except its magic links that lead anywhere
// (/proc/<pid>/root, cwd, fd/<n>, map_files/<range>); the ordinary /dev and
// /sys places are listed per OS (system_linux.go, system_darwin.go).
// Access reads no file system and does not allocate for ASCII paths.
//
// # Lookups on the way
//
// OpLookup is a metadata-only access: the stat family, access/faccessat,
// readlink, chdir, statfs and the getxattr family. It learns that a name
// exists and its attributes (mode, owner, size, times, link target), never
// a file's contents nor a directory's entries; opening a file to read it
// and listing a directory (getdents) are OpRead. Every program that
// resolves a path (realpath, getcwd, a shell's cd, Go's os.Getwd, a
// toolchain looking for go.mod upwards) looks up each directory on the way
// to the places it was granted, "/" first. So a lookup is allowed
//
//   - wherever a read is, and
//   - on every ancestor of a read place ("/", "/home" and "/home/u" when
//     /home/u/src is readable), the decision naming the shallowest such
//     place with the reason "an ancestor of a readable place";
//
// and the hidden-place rule comes first, as for every op: a lookup of a
// hidden place or of anything beneath it is denied under every spelling, a
// read place that a hidden place covers whole is on no way, and a lookup
// beneath a /proc magic link (/proc/self/root/etc/x) is denied like any
// access through it; a lookup of the link itself (readlink of
// /proc/self/fd/0, as glibc's ttyname does) goes nowhere and is allowed. A
// lookup of a sibling that leads to no read
// place (/home/v, /root, /data/other) is denied like a read. Reading the
// names in an ancestor directory is still a read: the rule lets a target
// walk to its places, not survey what lies beside them.
package grant
