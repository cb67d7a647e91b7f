//! What survives a power cut, kept in the backing folder: each inode's
//! synced bytes in `objects/<ino>`, and in `tree.json` every inode's mode
//! and, for a directory, its synced entries. Only syncs write here
//! ([`Durable::sync_file`], [`Durable::sync_dir`]); a mount starts from it.
//!
//! Nothing here is fsynced: the backing folder is on a real disk that does
//! not lose power during a test; the cut being simulated is the FUSE
//! mount's.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::PAGE;

/// The root directory's inode (FUSE's).
pub const ROOT: u64 = 1;
/// A directory's mode bits.
pub const DIR_MODE: u32 = libc::S_IFDIR | 0o755;

/// One synced inode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DurableNode {
    /// Type and permission bits.
    pub mode: u32,
    /// A directory's synced entries (name to inode); `None` for a file.
    pub entries: Option<BTreeMap<String, u64>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Tree {
    next_ino: u64,
    nodes: BTreeMap<u64, DurableNode>,
}

/// The synced state in a backing folder.
#[derive(Debug)]
pub struct Durable {
    dir: PathBuf,
    tree: Tree,
}

impl Durable {
    /// Opens the state in `dir` (an empty root when there is none yet) and
    /// drops what no synced entry reaches from the root: a file synced but
    /// never linked by a synced directory does not survive a cut.
    pub fn open(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir.join("objects"))?;
        let tree = match std::fs::read(dir.join("tree.json")) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Tree {
                next_ino: ROOT + 1,
                nodes: BTreeMap::from([(
                    ROOT,
                    DurableNode {
                        mode: DIR_MODE,
                        entries: Some(BTreeMap::new()),
                    },
                )]),
            },
            Err(e) => return Err(e),
        };
        let mut me = Self {
            dir: dir.to_owned(),
            tree,
        };
        me.collect_unreachable()?;
        Ok(me)
    }

    /// The first inode number not used yet.
    pub fn next_ino(&self) -> u64 {
        self.tree.next_ino
    }

    /// Every synced inode.
    pub fn nodes(&self) -> &BTreeMap<u64, DurableNode> {
        &self.tree.nodes
    }

    /// The synced length of a file's bytes.
    pub fn len(&self, ino: u64) -> u64 {
        std::fs::metadata(self.object(ino)).map_or(0, |m| m.len())
    }

    /// Reads synced bytes of `ino` at `offset` into `buf`; past the synced
    /// length reads zeros.
    pub fn read(&self, ino: u64, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        buf.fill(0);
        let file = match File::open(self.object(ino)) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let mut done = 0;
        while done < buf.len() {
            let n = file.read_at(&mut buf[done..], offset + done as u64)?;
            if n == 0 {
                break;
            }
            done += n;
        }
        Ok(())
    }

    /// Makes a file's bytes durable: cut to `cut_to` first (a truncation
    /// since the last sync), then `pages` written (page index to a whole
    /// page), then the length set to `size`; records its mode.
    pub fn sync_file(
        &mut self,
        ino: u64,
        mode: u32,
        cut_to: Option<u64>,
        pages: &BTreeMap<u64, Box<[u8]>>,
        size: u64,
    ) -> io::Result<()> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(self.object(ino))?;
        if let Some(at) = cut_to {
            if at < file.metadata()?.len() {
                file.set_len(at)?;
            }
        }
        for (index, page) in pages {
            let at = index * PAGE as u64;
            if at >= size {
                break;
            }
            let len = usize::try_from((size - at).min(PAGE as u64)).unwrap_or(PAGE);
            file.write_all_at(&page[..len], at)?;
        }
        file.set_len(size)?;
        self.note(ino, mode, None)
    }

    /// Makes a directory's entries durable: `entries` (name to inode and
    /// mode) become its synced entries; an entry's inode not synced yet
    /// becomes an empty file or directory.
    pub fn sync_dir(&mut self, ino: u64, entries: &BTreeMap<String, (u64, u32)>) -> io::Result<()> {
        for (child, mode) in entries.values() {
            if !self.tree.nodes.contains_key(child) {
                let is_dir = mode & libc::S_IFMT == libc::S_IFDIR;
                let node = DurableNode {
                    mode: *mode,
                    entries: is_dir.then(BTreeMap::new),
                };
                self.tree.nodes.insert(*child, node);
            }
        }
        let names = entries.iter().map(|(n, (i, _))| (n.clone(), *i)).collect();
        self.note(ino, DIR_MODE, Some(names))
    }

    /// Records that inode numbers below `next` are taken.
    pub fn reserve(&mut self, next: u64) {
        self.tree.next_ino = self.tree.next_ino.max(next);
    }

    /// Records `ino`'s mode (and a directory's entries); `tree.json` is
    /// rewritten only when that changed, not at every sync of a file's
    /// bytes (a new node always changes it).
    fn note(
        &mut self,
        ino: u64,
        mode: u32,
        entries: Option<BTreeMap<String, u64>>,
    ) -> io::Result<()> {
        let before = self.tree.nodes.get(&ino).cloned();
        let node = self.tree.nodes.entry(ino).or_insert(DurableNode {
            mode,
            entries: None,
        });
        node.mode = mode;
        if entries.is_some() {
            node.entries = entries;
        }
        let changed = before.as_ref() != Some(&*node);
        self.tree.next_ino = self.tree.next_ino.max(ino + 1);
        if changed {
            self.persist()?;
        }
        Ok(())
    }

    fn persist(&self) -> io::Result<()> {
        let tmp = self.dir.join("tree.json.tmp");
        let bytes = serde_json::to_vec(&self.tree).map_err(io::Error::other)?;
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(tmp, self.dir.join("tree.json"))
    }

    fn object(&self, ino: u64) -> PathBuf {
        self.dir.join("objects").join(ino.to_string())
    }

    fn collect_unreachable(&mut self) -> io::Result<()> {
        let mut reached = std::collections::BTreeSet::from([ROOT]);
        let mut stack = vec![ROOT];
        while let Some(ino) = stack.pop() {
            if let Some(entries) = self.tree.nodes.get(&ino).and_then(|n| n.entries.as_ref()) {
                for child in entries.values() {
                    if reached.insert(*child) {
                        stack.push(*child);
                    }
                }
            }
        }
        let gone: Vec<u64> = self
            .tree
            .nodes
            .keys()
            .filter(|i| !reached.contains(i))
            .copied()
            .collect();
        for ino in &gone {
            self.tree.nodes.remove(ino);
            match std::fs::remove_file(self.object(*ino)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        // A directory entry whose inode was never synced cannot be: sync_dir
        // adds the inode with the entry.
        self.persist()
    }
}
