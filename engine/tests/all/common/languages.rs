//! Builds the other languages' operator components for the tests: each language with
//! `examples/<lang>/build.sh --with-test-fixtures` into `<target>/lang/<lang>`, once (a stamp
//! records the build and is redone when a source is newer; a file lock serialises test
//! processes). The tools come from `$WEIR_TOOLS` (default `<repo>/target/tools`); `.ci/run`
//! installs them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The cargo target directory of this test binary (`<target>/debug/deps/<test>`).
fn target_dir() -> PathBuf {
    let weir = Path::new(env!("CARGO_BIN_EXE_weir"));
    weir.parent().and_then(Path::parent).expect("<target>/debug/weir").to_path_buf()
}

/// The newest modification time of the files under `dir`, skipping build outputs and
/// installed packages.
fn newest(dir: &Path) -> SystemTime {
    let mut latest = SystemTime::UNIX_EPOCH;
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if matches!(name.to_str(), Some("build" | "node_modules" | "__pycache__" | "target")) {
            continue;
        }
        let meta = entry.metadata().unwrap();
        let time = if meta.is_dir() { newest(&entry.path()) } else { meta.modified().unwrap() };
        latest = latest.max(time);
    }
    latest
}

/// Builds `lang`'s components (unless the last build is newer than every source) and returns
/// the directory holding them.
pub fn build(lang: &str) -> PathBuf {
    let root = repo();
    let out = target_dir().join("lang").join(lang);
    std::fs::create_dir_all(&out).unwrap();
    // One build at a time, across the test processes.
    let lock = std::fs::File::create(target_dir().join("lang").join(format!("{lang}.lock"))).unwrap();
    lock.lock().expect("lock the language build");
    let stamp = out.join(".built");
    let sources =
        [root.join("examples").join(lang), root.join("wit"), root.join("engine/test-guests/worlds")]
            .iter()
            .map(|d| newest(d))
            .max()
            .unwrap();
    let built = std::fs::metadata(&stamp).and_then(|m| m.modified()).ok();
    if built.is_none_or(|b| b < sources) {
        let script = root.join("examples").join(lang).join("build.sh");
        eprintln!("building the {lang} components: {} --with-test-fixtures", script.display());
        let output = Command::new("bash")
            .arg(&script)
            .arg("--with-test-fixtures")
            .env("WEIR_BUILD_DIR", &out)
            .env("CARGO_TARGET_DIR", target_dir())
            .output()
            .expect("run build.sh");
        assert!(
            output.status.success(),
            "{} failed ({}); install the tools with `{} --tools-only`:\n{}\n{}",
            script.display(),
            output.status,
            script.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        std::fs::write(&stamp, b"").unwrap();
    }
    out
}
