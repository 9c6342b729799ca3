//! A worker's own directory (`weir worker --dir`): its compiled modules — native code the
//! worker loads and runs as it finds it — and host state's working copies. Whoever can
//! write there can make the worker run their code, so the directory, and each folder the
//! worker keeps in it, must be this user's and not writable by group or others (as ssh
//! refuses a key file others may change); the worker refuses to start otherwise. Without
//! `--dir` it makes a fresh directory of a random name, mode 0700, under the system's
//! temporary directory, and removes it when it exits. Directories it creates are 0700.

use std::fs::{DirBuilder, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

/// The worker's directory, checked; a fresh one is removed on drop.
#[derive(Debug)]
pub struct WorkDir {
    path: PathBuf,
    /// The fresh directory made without `--dir`.
    _fresh: Option<tempfile::TempDir>,
}

/// Why the worker's directory cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkDirError {
    /// It could not be created or read.
    #[error("the worker's directory {path}: {source}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// Someone else owns it.
    #[error(
        "the worker's directory {path} belongs to uid {owner}, not to this user (uid {me}); compiled modules there are native code the worker runs: give --dir a directory of this user's (mode 0700), or leave --dir out for a fresh private one"
    )]
    Owner {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// This process's user.
        me: u32,
    },
    /// Group or others may write there.
    #[error(
        "the worker's directory {path} has mode {mode:o}, so group or others may write there, and compiled modules there are native code the worker runs: run `chmod go-w {path}` (or `chmod 700`), or give --dir another directory"
    )]
    Mode {
        /// The directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Not a directory (a file, or a symbolic link inside it).
    #[error(
        "the worker's directory {path} is not a directory (a symbolic link or a file): remove it, or give --dir another directory"
    )]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> WorkDirError + '_ {
    move |source| WorkDirError::Io { path: path.to_path_buf(), source }
}

/// Creates `path` (and what is missing above it) with mode 0700; an existing one is left.
fn create_private(path: &Path) -> Result<(), WorkDirError> {
    DirBuilder::new().recursive(true).mode(0o700).create(path).map_err(io_error(path))
}

/// Refuses `path` unless it is a directory (not a link to one) of this user's that group
/// and others cannot write to.
fn check(path: &Path) -> Result<(), WorkDirError> {
    let meta = std::fs::symlink_metadata(path).map_err(io_error(path))?;
    if !meta.is_dir() {
        return Err(WorkDirError::NotADirectory { path: path.to_path_buf() });
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(WorkDirError::Owner { path: path.to_path_buf(), owner: meta.uid(), me });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(WorkDirError::Mode { path: path.to_path_buf(), mode });
    }
    Ok(())
}

impl WorkDir {
    /// `dir` (created 0700 when missing), or without it a fresh private directory; refused
    /// unless it is this user's and closed to group and others' writes.
    pub fn open(dir: Option<&Path>) -> Result<WorkDir, WorkDirError> {
        let (path, fresh) = match dir {
            Some(dir) => {
                create_private(dir)?;
                // Links resolved once, here: later paths do not follow a link swapped in.
                (std::fs::canonicalize(dir).map_err(io_error(dir))?, None)
            }
            None => {
                let temp = std::env::temp_dir();
                let fresh = tempfile::Builder::new()
                    .prefix("weir-worker-")
                    .permissions(Permissions::from_mode(0o700))
                    .tempdir_in(&temp)
                    .map_err(io_error(&temp))?;
                (fresh.path().to_path_buf(), Some(fresh))
            }
        };
        check(&path)?;
        Ok(WorkDir { path, _fresh: fresh })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its folder `name` (`module-cache`, `local-state`), created 0700 when missing and
    /// checked as the directory is.
    pub fn folder(&self, name: &str) -> Result<PathBuf, WorkDirError> {
        let path = self.path.join(name);
        create_private(&path)?;
        check(&path)?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn without_dir_a_fresh_private_directory_is_made_and_removed() {
        let dir = WorkDir::open(None).unwrap();
        let path = dir.path().to_path_buf();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o700, "{}", path.display());
        assert_eq!(meta.uid(), rustix::process::geteuid().as_raw());
        let cache = dir.folder("module-cache").unwrap();
        assert_eq!(std::fs::metadata(&cache).unwrap().mode() & 0o7777, 0o700);
        assert!(WorkDir::open(None).unwrap().path() != path, "each worker gets its own");
        drop(dir);
        assert!(!path.exists(), "the fresh directory outlived the worker");
    }

    #[test]
    fn a_directory_others_may_write_to_is_refused_with_the_fix() {
        let parent = tempfile::tempdir().unwrap();
        let given = parent.path().join("work");
        // Missing: made 0700.
        let dir = WorkDir::open(Some(&given)).unwrap();
        assert_eq!(std::fs::metadata(dir.path()).unwrap().mode() & 0o7777, 0o700);
        for mode in [0o777, 0o770, 0o1777, 0o702] {
            chmod(&given, mode);
            let e = WorkDir::open(Some(&given)).unwrap_err().to_string();
            assert!(e.contains(&given.display().to_string()) && e.contains("chmod go-w"), "{mode:o}: {e}");
        }
        chmod(&given, 0o755);
        WorkDir::open(Some(&given)).unwrap();
        // A folder inside it, open to others or a link elsewhere, is refused too.
        let cache = given.join("module-cache");
        std::fs::create_dir(&cache).unwrap();
        chmod(&cache, 0o777);
        let e = dir.folder("module-cache").unwrap_err().to_string();
        assert!(e.contains("module-cache") && e.contains("mode 777"), "{e}");
        std::fs::remove_dir(&cache).unwrap();
        std::os::unix::fs::symlink(parent.path(), &cache).unwrap();
        let e = dir.folder("module-cache").unwrap_err().to_string();
        assert!(e.contains("not a directory"), "{e}");
    }

    #[test]
    fn a_directory_of_another_user_is_refused() {
        // Giving a directory away needs root (as the CI machine and this one run tests).
        if !rustix::process::geteuid().is_root() {
            return;
        }
        let parent = tempfile::tempdir().unwrap();
        let given = parent.path().join("theirs");
        std::fs::create_dir(&given).unwrap();
        chmod(&given, 0o700);
        std::os::unix::fs::chown(&given, Some(65534), Some(65534)).unwrap();
        let e = WorkDir::open(Some(&given)).unwrap_err().to_string();
        assert!(e.contains("belongs to uid 65534") && e.contains(&given.display().to_string()), "{e}");
    }
}
