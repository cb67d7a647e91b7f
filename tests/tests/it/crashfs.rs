//! The crash-consistency filesystem itself, mounted (root and /dev/fuse,
//! as on CI): after a power cut a file keeps exactly its synced bytes,
//! through write(2) and through a mapping (msync and fdatasync, the
//! CommitLog's two flush methods), a create or rename needs its directory
//! synced, faults fail writes and syncs by path, and a lying fsync keeps
//! nothing.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use rmq_crashfs::{CrashFs, Fault, FaultOp};
use rmq_store_file::mapped_file::{FlushMethod, MappedFile};

fn mounted() -> (tempfile::TempDir, CrashFs) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("backing")).unwrap();
    std::fs::create_dir(dir.path().join("mnt")).unwrap();
    let fs = CrashFs::mount(&dir.path().join("backing"), &dir.path().join("mnt"))
        .unwrap_or_else(|e| panic!("{e}: the power-loss tests need root and /dev/fuse"));
    (dir, fs)
}

fn sync_dir(dir: &Path) {
    File::open(dir).unwrap().sync_all().unwrap();
}

#[test]
fn a_cut_keeps_synced_bytes_and_synced_entries_only() {
    let (_dir, mut fs) = mounted();
    let root = fs.mountpoint().to_owned();
    std::fs::create_dir(root.join("store")).unwrap();
    sync_dir(&root);
    let mut f = File::create(root.join("store/log")).unwrap();
    f.write_all(b"acked").unwrap();
    f.sync_all().unwrap();
    sync_dir(&root.join("store"));
    f.write_all(b"+unsynced").unwrap();
    let mut g = File::create(root.join("store/never-linked")).unwrap();
    g.write_all(b"x").unwrap();
    g.sync_all().unwrap();
    assert_eq!(
        std::fs::read(root.join("store/log")).unwrap(),
        b"acked+unsynced"
    );
    drop((f, g));
    fs.restart().unwrap();
    assert_eq!(std::fs::read(root.join("store/log")).unwrap(), b"acked");
    assert!(
        !root.join("store/never-linked").exists(),
        "its directory was not synced"
    );

    // A rename is durable once its directory is synced.
    let replace_log = || {
        std::fs::write(root.join("store/t.tmp"), b"v2").unwrap();
        File::open(root.join("store/t.tmp"))
            .unwrap()
            .sync_all()
            .unwrap();
        std::fs::rename(root.join("store/t.tmp"), root.join("store/log")).unwrap();
    };
    replace_log();
    fs.restart().unwrap();
    assert_eq!(std::fs::read(root.join("store/log")).unwrap(), b"acked");
    replace_log();
    sync_dir(&root.join("store"));
    fs.restart().unwrap();
    assert_eq!(std::fs::read(root.join("store/log")).unwrap(), b"v2");
}

#[test]
fn mapped_writes_survive_only_after_msync_or_fdatasync() {
    let (_dir, mut fs) = mounted();
    let root = fs.mountpoint().to_owned();
    for (name, method) in [
        ("msync", FlushMethod::Msync),
        ("fdatasync", FlushMethod::Fdatasync),
    ] {
        let path = root.join(name);
        let file = MappedFile::create(&path, 0, 1 << 20).unwrap();
        sync_dir(&root);
        assert_eq!(file.append(&[1u8; 10_000]), Some(0));
        file.flush(0, method).unwrap();
        assert!(file.append(&[2u8; 10_000]).is_some());
        drop(file);
    }
    fs.restart().unwrap();
    for name in ["msync", "fdatasync"] {
        let bytes = std::fs::read(root.join(name)).unwrap();
        assert_eq!(bytes.len(), 1 << 20, "{name}");
        assert!(
            bytes[..10_000].iter().all(|b| *b == 1),
            "{name}: flushed bytes kept"
        );
        assert!(
            bytes[10_000..].iter().all(|b| *b == 0),
            "{name}: unflushed bytes gone"
        );
    }
}

#[test]
fn faults_fail_writes_and_syncs_by_path_and_a_lying_sync_keeps_nothing() {
    let (_dir, mut fs) = mounted();
    let root = fs.mountpoint().to_owned();
    std::fs::create_dir(root.join("a")).unwrap();
    std::fs::create_dir(root.join("b")).unwrap();
    sync_dir(&root);
    fs.faults()
        .inject(Fault::always(FaultOp::Write, "/a", libc::ENOSPC));
    let mut fa = File::create(root.join("a/f")).unwrap();
    let e = fa.write_all(b"x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
    let mut fb = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(root.join("b/f"))
        .unwrap();
    fb.write_all(b"kept?").unwrap();
    fs.faults().inject(Fault {
        times: Some(1),
        ..Fault::always(FaultOp::Sync, "/b", libc::EIO)
    });
    let e = fb.sync_all().unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    // The failed sync dropped the bytes, as Linux does: a retried sync
    // succeeds and they are not on disk.
    fb.sync_all().unwrap();
    sync_dir(&root.join("b"));
    fs.faults().heal();
    fa.write_all(b"healed").unwrap();
    fa.sync_all().unwrap();
    sync_dir(&root.join("a"));
    fs.faults().lie_about_sync(true);
    let mut lied = File::create(root.join("a/lied")).unwrap();
    lied.write_all(b"never durable").unwrap();
    lied.sync_all().unwrap();
    sync_dir(&root.join("a"));
    drop((fa, fb, lied));
    fs.restart().unwrap();
    assert_eq!(std::fs::read(root.join("a/f")).unwrap(), b"healed");
    assert_eq!(std::fs::read(root.join("b/f")).unwrap(), b"");
    assert!(!root.join("a/lied").exists());
}
