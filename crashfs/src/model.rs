//! The filesystem as programs see it between two power cuts: the synced
//! state ([`Durable`]) plus what was written since, in memory. A write
//! lands in a file's dirty pages; `fsync` moves them to the backing
//! folder; a create, unlink or rename changes only the in-memory directory
//! until that directory is fsynced (POSIX's rule, which ext4 and XFS are
//! more generous than). A cut is dropping this value and opening the
//! durable state again.
//!
//! Operations answer an errno on failure, as FUSE replies do.

use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

use crate::durable::{Durable, DIR_MODE, ROOT};

/// The unit of dirty data.
pub const PAGE: usize = 4096;

/// An errno.
pub type Errno = i32;

/// What `getattr` shows of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    /// Inode.
    pub ino: u64,
    /// Type and permission bits.
    pub mode: u32,
    /// Length in bytes (files).
    pub size: u64,
    /// Last change of the bytes.
    pub mtime: SystemTime,
    /// Directory entries naming it (files; 2 for a directory).
    pub nlink: u32,
}

impl Attr {
    /// A directory.
    pub fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }
}

#[derive(Debug)]
struct FileState {
    size: u64,
    /// The lowest length the file was cut to since its last sync: synced
    /// bytes at or past it are gone.
    cut_to: Option<u64>,
    /// Whole pages written since the last sync, by page index.
    dirty: BTreeMap<u64, Box<[u8]>>,
}

#[derive(Debug)]
enum Kind {
    Dir(BTreeMap<String, u64>),
    File(FileState),
}

#[derive(Debug)]
struct Node {
    /// The directories holding it and its names there (a file may have
    /// several: hard links), the first for fault rules matching paths;
    /// empty once unlinked.
    links: Vec<(u64, String)>,
    mode: u32,
    mtime: SystemTime,
    /// Lookups the kernel holds (FUSE's nlookup); an unlinked node goes when
    /// this reaches 0.
    lookups: u64,
    kind: Kind,
}

/// The live filesystem over its synced state.
#[derive(Debug)]
pub struct Model {
    durable: Durable,
    nodes: HashMap<u64, Node>,
    next_ino: u64,
}

impl Model {
    /// The live view of `durable` right after a mount: exactly what was
    /// synced.
    pub fn new(durable: Durable) -> Self {
        let now = SystemTime::now();
        let mut nodes = HashMap::new();
        for (ino, d) in durable.nodes() {
            let kind = match &d.entries {
                Some(entries) => Kind::Dir(entries.clone()),
                None => Kind::File(FileState {
                    size: durable.len(*ino),
                    cut_to: None,
                    dirty: BTreeMap::new(),
                }),
            };
            let node = Node {
                links: Vec::new(),
                mode: d.mode,
                mtime: now,
                lookups: 0,
                kind,
            };
            nodes.insert(*ino, node);
        }
        let links: Vec<(u64, String, u64)> = nodes
            .iter()
            .filter_map(|(ino, n)| match &n.kind {
                Kind::Dir(e) => Some(
                    e.iter()
                        .map(|(name, c)| (*ino, name.clone(), *c))
                        .collect::<Vec<_>>(),
                ),
                Kind::File(_) => None,
            })
            .flatten()
            .collect();
        for (parent, name, child) in links {
            if let Some(n) = nodes.get_mut(&child) {
                n.links.push((parent, name));
            }
        }
        let next_ino = durable.next_ino();
        Self {
            durable,
            nodes,
            next_ino,
        }
    }

    /// `ino`'s attributes.
    pub fn getattr(&self, ino: u64) -> Result<Attr, Errno> {
        let n = self.nodes.get(&ino).ok_or(libc::ENOENT)?;
        Ok(Attr {
            ino,
            mode: n.mode,
            size: match &n.kind {
                Kind::File(f) => f.size,
                Kind::Dir(_) => 0,
            },
            mtime: n.mtime,
            nlink: match &n.kind {
                Kind::File(_) => u32::try_from(n.links.len()).unwrap_or(u32::MAX),
                Kind::Dir(_) => 2,
            },
        })
    }

    /// The path of `ino` from the root (`/a/b`), for fault rules; `None`
    /// once unlinked.
    pub fn path(&self, ino: u64) -> Option<String> {
        let mut parts = Vec::new();
        let mut at = ino;
        while at != ROOT {
            let (parent, name) = self.nodes.get(&at)?.links.first()?;
            parts.push(name.as_str());
            at = *parent;
        }
        parts.reverse();
        Some(format!("/{}", parts.join("/")))
    }

    /// The entry `name` of `parent`; the kernel now holds one more lookup.
    pub fn lookup(&mut self, parent: u64, name: &str) -> Result<Attr, Errno> {
        let child = *self.dir(parent)?.get(name).ok_or(libc::ENOENT)?;
        self.hold(child)
    }

    /// The kernel dropped `n` lookups of `ino`.
    pub fn forget(&mut self, ino: u64, n: u64) {
        if let Some(node) = self.nodes.get_mut(&ino) {
            node.lookups = node.lookups.saturating_sub(n);
            if node.lookups == 0 && node.links.is_empty() && ino != ROOT {
                self.nodes.remove(&ino);
            }
        }
    }

    /// A new empty file `name` in `parent`.
    pub fn create(&mut self, parent: u64, name: &str, mode: u32) -> Result<Attr, Errno> {
        let kind = Kind::File(FileState {
            size: 0,
            cut_to: None,
            dirty: BTreeMap::new(),
        });
        self.add(parent, name, libc::S_IFREG | (mode & 0o7777), kind)
    }

    /// A new directory `name` in `parent`.
    pub fn mkdir(&mut self, parent: u64, name: &str, mode: u32) -> Result<Attr, Errno> {
        let kind = Kind::Dir(BTreeMap::new());
        self.add(parent, name, libc::S_IFDIR | (mode & 0o7777), kind)
    }

    /// Removes the file `name` of `parent` (it lives on while the kernel
    /// holds it).
    pub fn unlink(&mut self, parent: u64, name: &str) -> Result<(), Errno> {
        let child = *self.dir(parent)?.get(name).ok_or(libc::ENOENT)?;
        if self.getattr(child)?.is_dir() {
            return Err(libc::EISDIR);
        }
        self.detach(parent, name, child);
        Ok(())
    }

    /// Removes the empty directory `name` of `parent`.
    pub fn rmdir(&mut self, parent: u64, name: &str) -> Result<(), Errno> {
        let child = *self.dir(parent)?.get(name).ok_or(libc::ENOENT)?;
        if !self.dir(child)?.is_empty() {
            return Err(libc::ENOTEMPTY);
        }
        self.detach(parent, name, child);
        Ok(())
    }

    /// Moves `name` of `parent` to `to_name` of `to_parent`, replacing a
    /// file there (or an empty directory, with a directory); `no_replace`
    /// refuses an existing target.
    pub fn rename(
        &mut self,
        (parent, name): (u64, &str),
        (to_parent, to_name): (u64, &str),
        no_replace: bool,
    ) -> Result<(), Errno> {
        let child = *self.dir(parent)?.get(name).ok_or(libc::ENOENT)?;
        let moving_dir = self.getattr(child)?.is_dir();
        if let Some(&existing) = self.dir(to_parent)?.get(to_name) {
            if existing == child {
                return Ok(());
            }
            if no_replace {
                return Err(libc::EEXIST);
            }
            match (moving_dir, self.getattr(existing)?.is_dir()) {
                (false, true) => return Err(libc::EISDIR),
                (true, false) => return Err(libc::ENOTDIR),
                (true, true) if !self.dir(existing)?.is_empty() => return Err(libc::ENOTEMPTY),
                _ => {}
            }
            self.detach(to_parent, to_name, existing);
        }
        if moving_dir && self.is_within(to_parent, child) {
            return Err(libc::EINVAL);
        }
        self.dir_mut(parent)?.remove(name);
        self.dir_mut(to_parent)?.insert(to_name.to_owned(), child);
        if let Some(n) = self.nodes.get_mut(&child) {
            n.links.retain(|l| *l != (parent, name.to_owned()));
            n.links.push((to_parent, to_name.to_owned()));
        }
        Ok(())
    }

    /// A second name `name` in `parent` for the file `ino` (a hard link).
    pub fn link(&mut self, ino: u64, parent: u64, name: &str) -> Result<Attr, Errno> {
        if self.getattr(ino)?.is_dir() {
            return Err(libc::EPERM);
        }
        if self.dir(parent)?.contains_key(name) {
            return Err(libc::EEXIST);
        }
        self.dir_mut(parent)?.insert(name.to_owned(), ino);
        if let Some(n) = self.nodes.get_mut(&ino) {
            n.links.push((parent, name.to_owned()));
        }
        self.touch(parent);
        self.hold(ino)
    }

    /// `parent`'s entries, with each entry's inode and mode.
    pub fn readdir(&self, ino: u64) -> Result<Vec<(String, u64, u32)>, Errno> {
        Ok(self
            .dir(ino)?
            .iter()
            .map(|(name, c)| (name.clone(), *c, self.nodes.get(c).map_or(0, |n| n.mode)))
            .collect())
    }

    /// Reads up to `size` bytes of `ino` at `offset` (fewer at the end).
    pub fn read(&self, ino: u64, offset: u64, size: u32) -> Result<Vec<u8>, Errno> {
        let f = self.file(ino)?;
        let end = f.size.min(offset.saturating_add(u64::from(size)));
        if offset >= end {
            return Ok(Vec::new());
        }
        let mut out = Vec::with_capacity(usize::try_from(end - offset).unwrap_or(0));
        let mut at = offset;
        while at < end {
            let index = at / PAGE as u64;
            let page = self.page(ino, f, index)?;
            let from = (at % PAGE as u64) as usize;
            let to = usize::try_from((end - index * PAGE as u64).min(PAGE as u64)).unwrap_or(PAGE);
            out.extend_from_slice(&page[from..to]);
            at = (index + 1) * PAGE as u64;
        }
        Ok(out)
    }

    /// Writes `data` into `ino` at `offset`, in memory.
    pub fn write(&mut self, ino: u64, offset: u64, data: &[u8]) -> Result<usize, Errno> {
        let end = offset.checked_add(data.len() as u64).ok_or(libc::EFBIG)?;
        let mut at = offset;
        while at < end {
            let index = at / PAGE as u64;
            let from = (at % PAGE as u64) as usize;
            let take = (PAGE - from).min(usize::try_from(end - at).unwrap_or(PAGE));
            let src = &data[usize::try_from(at - offset).unwrap_or(0)..][..take];
            let mut page = match self.file(ino)?.dirty.get(&index) {
                Some(p) => p.clone(),
                None => self.page(ino, self.file(ino)?, index)?,
            };
            page[from..from + take].copy_from_slice(src);
            self.file_mut(ino)?.dirty.insert(index, page);
            at += take as u64;
        }
        let f = self.file_mut(ino)?;
        f.size = f.size.max(end);
        self.touch(ino);
        Ok(data.len())
    }

    /// Sets `ino`'s length (zeros past the old end; bytes past the new end
    /// gone).
    pub fn truncate(&mut self, ino: u64, size: u64) -> Result<(), Errno> {
        let f = self.file_mut(ino)?;
        if size < f.size {
            f.cut_to = Some(f.cut_to.map_or(size, |c| c.min(size)));
            let first_gone = size.div_ceil(PAGE as u64);
            f.dirty.split_off(&first_gone);
            if !size.is_multiple_of(PAGE as u64) {
                let index = size / PAGE as u64;
                let keep = (size % PAGE as u64) as usize;
                if let Some(p) = f.dirty.get_mut(&index) {
                    p[keep..].fill(0);
                }
            }
        }
        f.size = size;
        self.touch(ino);
        Ok(())
    }

    /// Sets the permission bits of `ino`.
    pub fn chmod(&mut self, ino: u64, mode: u32) -> Result<(), Errno> {
        let n = self.nodes.get_mut(&ino).ok_or(libc::ENOENT)?;
        n.mode = (n.mode & libc::S_IFMT) | (mode & 0o7777);
        Ok(())
    }

    /// Makes `ino`'s bytes durable (a directory's entries, for a
    /// directory).
    pub fn fsync(&mut self, ino: u64) -> Result<(), Errno> {
        let n = self.nodes.get(&ino).ok_or(libc::ENOENT)?;
        let mode = n.mode;
        let Kind::File(f) = &n.kind else {
            return self.fsyncdir(ino);
        };
        self.durable
            .sync_file(ino, mode, f.cut_to, &f.dirty, f.size)
            .map_err(|e| {
                tracing::error!(ino, error = %e, "crashfs: the backing folder refused a sync");
                libc::EIO
            })?;
        let f = self.file_mut(ino)?;
        f.dirty.clear();
        f.cut_to = None;
        Ok(())
    }

    /// Makes `ino`'s entries durable (not the entries' bytes).
    pub fn fsyncdir(&mut self, ino: u64) -> Result<(), Errno> {
        let entries: BTreeMap<String, (u64, u32)> = self
            .dir(ino)?
            .iter()
            .map(|(name, c)| {
                (
                    name.clone(),
                    (*c, self.nodes.get(c).map_or(DIR_MODE, |n| n.mode)),
                )
            })
            .collect();
        self.durable.reserve(self.next_ino);
        self.durable.sync_dir(ino, &entries).map_err(|e| {
            tracing::error!(ino, error = %e, "crashfs: the backing folder refused a directory sync");
            libc::EIO
        })
    }

    /// Forgets `ino`'s bytes written since its last sync, as Linux does
    /// when writing them back fails (the pages are marked clean): a later
    /// fsync succeeds without them.
    pub fn drop_unsynced(&mut self, ino: u64) {
        let len = self.durable.len(ino);
        if let Ok(f) = self.file_mut(ino) {
            f.dirty.clear();
            f.cut_to = None;
            f.size = len;
        }
    }

    /// Bytes written and not synced, over every file.
    pub fn unsynced_bytes(&self) -> u64 {
        self.nodes
            .values()
            .map(|n| match &n.kind {
                Kind::File(f) => (f.dirty.len() * PAGE) as u64,
                Kind::Dir(_) => 0,
            })
            .sum()
    }

    fn add(&mut self, parent: u64, name: &str, mode: u32, kind: Kind) -> Result<Attr, Errno> {
        if self.dir(parent)?.contains_key(name) {
            return Err(libc::EEXIST);
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        let node = Node {
            links: vec![(parent, name.to_owned())],
            mode,
            mtime: SystemTime::now(),
            lookups: 0,
            kind,
        };
        self.nodes.insert(ino, node);
        self.dir_mut(parent)?.insert(name.to_owned(), ino);
        self.touch(parent);
        self.hold(ino)
    }

    fn hold(&mut self, ino: u64) -> Result<Attr, Errno> {
        self.nodes.get_mut(&ino).ok_or(libc::ENOENT)?.lookups += 1;
        self.getattr(ino)
    }

    fn detach(&mut self, parent: u64, name: &str, child: u64) {
        if let Ok(d) = self.dir_mut(parent) {
            d.remove(name);
        }
        if let Some(n) = self.nodes.get_mut(&child) {
            n.links.retain(|l| *l != (parent, name.to_owned()));
            if n.links.is_empty() && n.lookups == 0 {
                self.nodes.remove(&child);
            }
        }
        self.touch(parent);
    }

    fn is_within(&self, mut ino: u64, ancestor: u64) -> bool {
        loop {
            if ino == ancestor {
                return true;
            }
            match self.nodes.get(&ino).and_then(|n| n.links.first()) {
                Some((parent, _)) => ino = *parent,
                None => return false,
            }
        }
    }

    fn touch(&mut self, ino: u64) {
        if let Some(n) = self.nodes.get_mut(&ino) {
            n.mtime = SystemTime::now();
        }
    }

    fn page(&self, ino: u64, f: &FileState, index: u64) -> Result<Box<[u8]>, Errno> {
        if let Some(p) = f.dirty.get(&index) {
            return Ok(p.clone());
        }
        let mut page = vec![0u8; PAGE].into_boxed_slice();
        let at = index * PAGE as u64;
        let synced_end = f.cut_to.unwrap_or(u64::MAX).min(f.size);
        if at < synced_end {
            self.durable.read(ino, at, &mut page).map_err(|e| {
                tracing::error!(ino, error = %e, "crashfs: the backing folder refused a read");
                libc::EIO
            })?;
            let keep = usize::try_from(synced_end - at).unwrap_or(PAGE).min(PAGE);
            page[keep..].fill(0);
        }
        Ok(page)
    }

    fn dir(&self, ino: u64) -> Result<&BTreeMap<String, u64>, Errno> {
        match &self.nodes.get(&ino).ok_or(libc::ENOENT)?.kind {
            Kind::Dir(d) => Ok(d),
            Kind::File(_) => Err(libc::ENOTDIR),
        }
    }

    fn dir_mut(&mut self, ino: u64) -> Result<&mut BTreeMap<String, u64>, Errno> {
        match &mut self.nodes.get_mut(&ino).ok_or(libc::ENOENT)?.kind {
            Kind::Dir(d) => Ok(d),
            Kind::File(_) => Err(libc::ENOTDIR),
        }
    }

    fn file(&self, ino: u64) -> Result<&FileState, Errno> {
        match &self.nodes.get(&ino).ok_or(libc::ENOENT)?.kind {
            Kind::File(f) => Ok(f),
            Kind::Dir(_) => Err(libc::EISDIR),
        }
    }

    fn file_mut(&mut self, ino: u64) -> Result<&mut FileState, Errno> {
        match &mut self.nodes.get_mut(&ino).ok_or(libc::ENOENT)?.kind {
            Kind::File(f) => Ok(f),
            Kind::Dir(_) => Err(libc::EISDIR),
        }
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
