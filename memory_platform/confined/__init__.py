"""The one confined file reader (and writer): every file found, read or written on a user's
behalf goes through here (imports: the adapters' walks and opens, the catalog, the folder
sensor's scan; the wiki's intake and build; the curator's repository tools).

    listing = walk(folder, wanted=...)  # tree.py: the regular files under a root, and skips
    with open_file(path) as fh: ...     # files.py: one file by its real path (a walk's)
    root = Root(folder)                 # root.py: by path relative to a root; read, write

- A root is a folder (or one file) the user named, resolved once: a root that is itself a
  symlink is followed, by the user's choice. Below it, a symlink out of it, a dangling one
  and a loop are refused and reported. One whose target stays inside is followed with
  `links=INSIDE` (imports, the curator: the file is listed once, by its real path, and only
  if the rules `wanted` and `descend` accept the target where it is; a symlinked folder is
  not descended, its target being walked where it is); with `links=REFUSE` (the wiki, whose
  files the build owns) every symlink is refused and reported.
- Nothing blocks, and only regular files are read: a file is opened with O_NONBLOCK and
  O_NOFOLLOW, each folder on its path with O_NOFOLLOW from the one before, from `/` (a path
  is opened only by its real path, so a folder swapped for a symlink after the walk is
  refused, not followed), and the type is checked with fstat on what was opened: a FIFO,
  socket, device or folder is refused.
- Sizes are capped (`max_bytes` per file, checked on the open file and while reading; depth
  and entries per walk), a NUL in a path is refused, a name that is not UTF-8 is skipped.
  Every skip is a `Skip` in the listing for the caller to report (import errors, wiki
  findings, a tool's refusal); a refused open raises `Refused`, an OSError.
- Writes replace a file atomically inside its root: the folders on the way are opened (or
  created) with O_NOFOLLOW, the bytes go to a new temporary file (O_EXCL) in the target's
  folder, renamed over the name: a rename replaces a symlink, never writes through it.

Not covered: hard links (a hard link is the file it links; Linux's protected_hardlinks keeps
other users' files out), and a root's own ancestors changing under a running walk. Imports
nothing of the project (the adapters use it, and may not import settings).
"""

from memory_platform.confined.files import (
    Refused,
    append_text,
    kind_of,
    open_file,
    read_bytes,
    read_capped,
    show,
)
from memory_platform.confined.root import Root
from memory_platform.confined.tree import (
    INSIDE,
    MAX_DEPTH,
    MAX_ENTRIES,
    REFUSE,
    Listing,
    Rule,
    Skip,
    walk,
)

__all__ = ["INSIDE", "MAX_DEPTH", "MAX_ENTRIES", "REFUSE", "Listing", "Refused", "Root",
           "Rule", "Skip", "append_text", "kind_of", "open_file", "read_bytes", "read_capped", "show", "walk"]
