package grant

// SystemRoots are this OS's system runtime roots: readable and executable,
// like /usr. They are what @system expands to (with the layer's
// systemPaths), and every target may read them. On macOS: /usr, /bin,
// /sbin, /System (the frameworks and the dyld cache), /Library/Apple and
// the Command Line Tools (git, clang). Homebrew's /opt/homebrew is not
// special: a pipeline names it in systemPaths when it needs it.
var SystemRoots = []string{"/usr", "/bin", "/sbin", "/System", "/Library/Apple", "/Library/Developer/CommandLineTools"}

// systemConfig is readable, never executable: /etc (a link to
// /private/etc), the time zone database and xcode-select's choice.
var systemConfig = []string{"/private/etc", "/private/var/db/timezone", "/private/var/select"}

// pseudoReads are the /dev places ordinary programs read.
var pseudoReads = []string{
	"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx",
	"/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/fd", "/dev/dtracehelper",
}

// pseudoWrites are the /dev places ordinary programs write.
var pseudoWrites = []string{
	"/dev/null", "/dev/zero", "/dev/tty", "/dev/ptmx", "/dev/stdout", "/dev/stderr", "/dev/fd", "/dev/dtracehelper",
}

// procAccess: macOS has no /proc.
func procAccess(string, Op) (Verdict, string, string, bool) { return Deny, "", "", false }
