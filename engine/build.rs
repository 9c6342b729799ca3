//! Builds the example operators and the test guests as wasm32-wasip2 components, and the
//! browser UI (`web-ui/`, with npm and Vite).
//!
//! The examples are embedded in the `weir` binary (`weir demo`, `builtin:` modules); every
//! guest's path is exported to the crate as `WEIR_GUEST_<NAME>` for tests and benchmarks.
//! The UI is built into `$OUT_DIR/web-ui`, which the binary embeds (`api::ui`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// (crate name, short name, embedded in the binary)
const GUESTS: &[(&str, &str, bool)] = &[
    ("weir-example-tokenizer", "tokenizer", true),
    ("weir-example-wordcount", "wordcount", true),
    ("weir-example-nexmark-q1", "nexmark-q1", true),
    ("weir-example-nexmark-q2", "nexmark-q2", true),
    ("weir-example-nexmark-q17", "nexmark-q17", true),
    ("weir-example-tumbling-window", "tumbling-window", true),
    ("weir-example-window", "window", true),
    ("weir-example-join", "join", true),
    ("weir-example-nexmark", "nexmark", true),
    ("weir-test-faulty", "faulty", false),
    ("weir-test-counter", "counter", true),
    ("weir-test-other-world", "other-world", false),
    ("weir-test-wordcount-v2", "wordcount-v2", false),
    ("weir-test-wordcount-v3", "wordcount-v3", false),
    ("weir-test-slow-describe", "slow-describe", false),
    ("weir-test-slow-migrate", "slow-migrate", false),
];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.parent().unwrap().to_path_buf();
    for dir in ["wit", "guest-sdk", "examples", "engine/test-guests"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    println!("cargo:rerun-if-changed={}", root.join("Cargo.lock").display());
    println!("cargo:rerun-if-changed={}", root.join(".cargo/config.toml").display());

    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("guests");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args(["build", "--profile", "guest", "--target", "wasm32-wasip2", "--target-dir"])
        .arg(&target_dir);
    for (krate, _, _) in GUESTS {
        cmd.args(["-p", krate]);
    }
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_RUSTFLAGS",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("failed to run cargo for the guest components");
    assert!(
        status.success(),
        "building the guest components failed; is the target installed? run `rustup target add wasm32-wasip2`"
    );

    let mut builtin = String::from(
        "/// Example operators embedded in the binary: (name, component bytes).\npub const BUILTIN: &[(&str, &[u8])] = &[\n",
    );
    for (krate, short, embed) in GUESTS {
        let path = target_dir.join("wasm32-wasip2/guest").join(format!("{}.wasm", krate.replace('-', "_")));
        assert!(path.exists(), "guest component {} was not produced", path.display());
        let var = format!("WEIR_GUEST_{}", short.to_uppercase().replace('-', "_"));
        println!("cargo:rustc-env={var}={}", path.display());
        if *embed {
            builtin
                .push_str(&format!("    ({short:?}, include_bytes!({:?})),\n", path.display().to_string()));
        }
    }
    builtin.push_str("];\n");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out_dir.join("builtin.rs"), builtin).unwrap();
    build_web_ui(&root.join("web-ui"), &out_dir.join("web-ui"));
}

/// Builds the UI with `npm run build` into `out` (installing its packages with `npm ci`
/// first when they are missing).
fn build_web_ui(ui: &Path, out: &Path) {
    // For a build of the engine alone while the UI is being edited (its every change would
    // build the UI and the crate again): a page that says the UI was left out. Tests of the
    // UI fail with it; CI never sets it.
    println!("cargo:rerun-if-env-changed=WEIR_SKIP_WEB_UI");
    if std::env::var_os("WEIR_SKIP_WEB_UI").is_some() {
        std::fs::create_dir_all(out).unwrap();
        std::fs::write(
            out.join("index.html"),
            "<!doctype html><title>Weir</title><p>This build left the web UI out (WEIR_SKIP_WEB_UI).</p>\n",
        )
        .unwrap();
        return;
    }
    // Only paths that exist: cargo reruns a build script on every build for a missing one.
    for entry in [
        "src",
        "public",
        "index.html",
        "package.json",
        "package-lock.json",
        "vite.config.ts",
        "tsconfig.json",
    ] {
        if ui.join(entry).exists() {
            println!("cargo:rerun-if-changed={}", ui.join(entry).display());
        }
    }
    let npm = |args: &[&str]| {
        let status = Command::new("npm")
            .args(args)
            .current_dir(ui)
            .env("WEIR_UI_OUT_DIR", out)
            .status()
            .unwrap_or_else(|e| panic!("cannot run npm for the web UI ({e}): install Node.js 20 and npm"));
        assert!(status.success(), "`npm {}` failed in {}", args.join(" "), ui.display());
    };
    // npm records what it installed in node_modules/.package-lock.json: install again when
    // the lock file is newer.
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let installed = modified(&ui.join("node_modules/.package-lock.json"));
    if installed.is_none() || installed < modified(&ui.join("package-lock.json")) {
        npm(&["ci", "--no-audit", "--no-fund"]);
    }
    npm(&["run", "build"]);
    assert!(
        out.join("index.html").exists(),
        "the web UI build produced no {}",
        out.join("index.html").display()
    );
}
